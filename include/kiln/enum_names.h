// The names of an enum's values, written once: one table of {value, name} rows beside the enum,
// in the enum's order, read in both directions. Each of kiln's enums that has a spelling (a
// manifest's job kinds, languages and toolchains, CUDA formats and backends, launchers, job and
// finding statuses) keeps such a table, and its name and from-name functions read it.
//
//   enum class Color { red, green };
//   inline constexpr kiln::EnumName<Color> kColorNames[] = {{Color::red, "red"},
//                                                           {Color::green, "green"}};
//   static_assert(kiln::in_enum_order(kColorNames, Color::green));  // every value, in order
//   kiln::enum_name(kColorNames, Color::green);  // "green"
//   kiln::enum_value(kColorNames, "red");        // Color::red; "blue": std::nullopt
//   kiln::enum_names(kColorNames);               // {"red", "green"}, e.g. for CLI::IsMember
//
// A table's rows may carry more than the name (kiln/launcher.h's kLaunchers says which launchers
// distribute): any struct with members `value` and `name` is a row.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

// True when `table` has one row for each value from the first (0) to `last`, in that order: a
// value without a name, or a row out of place, fails the static_assert that says so.
template <typename Row, std::size_t N>
constexpr bool in_enum_order(const Row (&table)[N], decltype(Row::value) last) {
  if (static_cast<std::size_t>(last) + 1 != N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(table[i].value) != i) return false;
  }
  return true;
}

// The name of `value`; "" for a value the table lacks (a table in_enum_order has them all).
template <typename Row, std::size_t N>
constexpr std::string_view enum_name(const Row (&table)[N], decltype(Row::value) value) {
  for (const Row& row : table) {
    if (row.value == value) return row.name;
  }
  return {};
}

// The value named `name` (exactly: "Red" is not "red"); std::nullopt for any other name.
template <typename Row, std::size_t N>
constexpr std::optional<decltype(Row::value)> enum_value(const Row (&table)[N],
                                                         std::string_view name) {
  for (const Row& row : table) {
    if (row.name == name) return row.value;
  }
  return std::nullopt;
}

// Every name, in the table's order.
template <typename Row, std::size_t N>
std::vector<std::string> enum_names(const Row (&table)[N]) {
  std::vector<std::string> names;
  names.reserve(N);
  for (const Row& row : table) names.emplace_back(row.name);
  return names;
}

}  // namespace kiln
