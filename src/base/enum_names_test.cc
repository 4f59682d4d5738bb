#include "kiln/enum_names.h"

#include <gtest/gtest.h>

#include "kiln/build.h"
#include "kiln/cuda.h"
#include "kiln/doctor.h"
#include "kiln/launcher.h"
#include "kiln/manifest.h"

namespace kiln {
namespace {

enum class Color { red, green };
inline constexpr EnumName<Color> kColorNames[] = {{Color::red, "red"}, {Color::green, "green"}};
static_assert(in_enum_order(kColorNames, Color::green));

TEST(EnumNames, HeaderExample) {
  EXPECT_EQ(enum_name(kColorNames, Color::green), "green");
  EXPECT_EQ(enum_value(kColorNames, "red"), Color::red);
  EXPECT_EQ(enum_value(kColorNames, "blue"), std::nullopt);
  EXPECT_EQ(enum_names(kColorNames), (std::vector<std::string>{"red", "green"}));
}

TEST(EnumNames, NamesAreExact) {
  EXPECT_EQ(enum_value(kColorNames, "Red"), std::nullopt);
  EXPECT_EQ(enum_value(kColorNames, "red "), std::nullopt);
  EXPECT_EQ(enum_value(kColorNames, ""), std::nullopt);
}

TEST(EnumNames, AMissingOrMisplacedRowIsNotInEnumOrder) {
  enum class Three { a, b, c };
  constexpr EnumName<Three> missing[] = {{Three::a, "a"}, {Three::b, "b"}};
  constexpr EnumName<Three> swapped[] = {{Three::a, "a"}, {Three::c, "c"}, {Three::b, "b"}};
  constexpr EnumName<Three> whole[] = {{Three::a, "a"}, {Three::b, "b"}, {Three::c, "c"}};
  static_assert(!in_enum_order(missing, Three::c));
  static_assert(!in_enum_order(swapped, Three::c));
  static_assert(in_enum_order(whole, Three::c));
  EXPECT_EQ(enum_name(missing, Three::c), "") << "a value the table lacks has no name";
}

// Each of kiln's tables reads back what it says, in both directions.
template <typename Row, std::size_t N>
void expect_round_trips(const Row (&table)[N]) {
  for (const Row& row : table) {
    EXPECT_EQ(enum_name(table, row.value), row.name);
    EXPECT_EQ(enum_value(table, row.name), row.value) << row.name;
  }
}

TEST(EnumNames, KilnsTablesRoundTrip) {
  expect_round_trips(build::kJobKindNames);
  expect_round_trips(build::kLanguageNames);
  expect_round_trips(build::kToolchainNames);
  expect_round_trips(build::kJobStatusNames);
  expect_round_trips(cuda::kFormatNames);
  expect_round_trips(cuda::kBackendNames);
  expect_round_trips(doctor::kStatusNames);
  expect_round_trips(kLaunchers);
  EXPECT_EQ(build::kind_name(build::JobKind::static_library), "static");
  EXPECT_EQ(build::language_name(build::Language::cxx), "c++");
  EXPECT_EQ(build::status_name(build::JobStatus::crashed), "crashed");
  EXPECT_EQ(cuda::format_name(cuda::Format::fatbin), "fatbin");
  EXPECT_EQ(doctor::status_name(doctor::Status::warn), "WARN");
}

}  // namespace
}  // namespace kiln
