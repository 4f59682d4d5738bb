// The rules of a manifest that do not depend on its JSON: which keys each job kind takes, which
// languages it compiles, whose outputs it may take as inputs, and what a valid name or arch is.
// The parser (manifest_parser.h) applies them; docs/manifest.md states them for people.
#pragma once

#include <algorithm>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/manifest.h"

namespace kiln::build::detail {

// Sets of kinds, one bit per kind.
using KindSet = unsigned;
constexpr KindSet bit(JobKind kind) { return 1U << static_cast<unsigned>(kind); }
constexpr KindSet kAllKinds = (1U << std::size(kJobKindNames)) - 1;
// Kinds compiled from "sources" or "code".
constexpr KindSet kCompileKinds = kAllKinds & ~(bit(JobKind::static_library) | bit(JobKind::tar));
// Kinds that make exactly one translation unit, so take one source.
constexpr KindSet kOneSourceKinds = bit(JobKind::object) | bit(JobKind::llvm_ir) |
                                    bit(JobKind::cuda) | bit(JobKind::rocm_code_object);
// Kinds built by the C/C++ compiler ("cc").
constexpr KindSet kCcKinds = bit(JobKind::object) | bit(JobKind::shared) | bit(JobKind::executable);
// Kinds compiled by a host C/C++-style driver (gcc, clang, emcc): host compile options fit them.
constexpr KindSet kHostCompileKinds = kCcKinds | bit(JobKind::llvm_ir) | bit(JobKind::wasm);
constexpr KindSet kInputKinds = bit(JobKind::shared) | bit(JobKind::executable) |
                                bit(JobKind::wasm) | bit(JobKind::static_library) |
                                bit(JobKind::tar);
constexpr KindSet kNeedInputKinds = bit(JobKind::static_library) | bit(JobKind::tar);

constexpr bool contains(KindSet set, JobKind kind) { return (set & bit(kind)) != 0; }

// A job key: the kinds that may set it, and the kinds that inherit the defaults' value.
struct KeyRule {
  std::string_view key;
  KindSet kinds;
  KindSet from_defaults;
};

constexpr KeyRule kJobKeys[] = {
    {"name", kAllKinds, 0},
    {"kind", kAllKinds, 0},
    {"sources", kCompileKinds, 0},
    {"code", kCompileKinds, 0},
    {"language", kCompileKinds, 0},
    {"inputs", kInputKinds, 0},
    {"deps", kAllKinds, 0},
    {"options", kCompileKinds, kHostCompileKinds},
    {"timeout", kAllKinds, kAllKinds},
    {"cc", kHostCompileKinds, kCcKinds},
    {"launcher", kCcKinds | bit(JobKind::cuda), kCcKinds | bit(JobKind::cuda)},
    {"toolchain", kCcKinds | bit(JobKind::static_library), kCcKinds | bit(JobKind::static_library)},
    {"arch", bit(JobKind::cuda) | bit(JobKind::rocm_code_object), bit(JobKind::cuda)},
    {"format", bit(JobKind::cuda), bit(JobKind::cuda)},
    {"backend", bit(JobKind::cuda), bit(JobKind::cuda)},
};

constexpr std::string_view kDefaultsKeys[] = {"timeout",   "cc",   "launcher", "options",
                                              "toolchain", "arch", "format",   "backend"};
constexpr std::string_view kTopLevelKeys[] = {"defaults", "jobs"};

// The rule of a job key; nullptr for a key that is not one.
const KeyRule* rule_of(std::string_view key);
// The languages a kind compiles (empty for static and tar).
std::span<const Language> languages_of_kind(JobKind kind);
// The kinds whose outputs a job of `kind` takes as "@name" inputs.
KindSet input_kinds_of(JobKind kind);

template <typename Range, typename Value>
bool has(const Range& range, const Value& value) {
  return std::find(std::begin(range), std::end(range), value) != std::end(range);
}

// "a, b and c" (or "a, b or c").
std::string in_words(const std::vector<std::string>& words, std::string_view conjunction);
std::string kinds_in_words(KindSet set, std::string_view conjunction);
std::string languages_in_words(std::span<const Language> languages, std::string_view conjunction);

// A job name becomes a file name: letters, digits, '_', '.', '+' and '-', not starting with '.'.
bool is_valid_name(std::string_view name);
bool is_rocm_arch(std::string_view arch);
bool is_cuda_arch(const std::string& arch);

}  // namespace kiln::build::detail
