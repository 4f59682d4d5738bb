// The library check on real shared libraries built by the test: one linked to the shared libLLVM,
// one with a symbol nothing defines, and a copy of a C++ one edited to need a GLIBCXX version
// this machine's libstdc++ lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/doctor.h"
#include "kiln/elf_dynamic.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;

std::optional<Finding> named(const std::vector<Finding>& findings, std::string_view check) {
  for (const Finding& f : findings) {
    if (f.check == check) return f;
  }
  return std::nullopt;
}

// Builds `source` (a C or C++ file by `name`'s extension) into dir/lib<stem>.so.
fs::path build(const fs::path& dir, const std::string& name, const std::string& source,
               std::vector<std::string> extra = {}) {
  std::ofstream(dir / name) << source;
  bool cxx = name.ends_with(".cc");
  fs::path out = dir / ("lib" + fs::path(name).stem().string() + ".so");
  std::vector<std::string> argv{cxx ? "g++" : "gcc",   "-shared", "-fPIC",
                                (dir / name).string(), "-o",      out.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run({.argv = argv});
  EXPECT_TRUE(r.ok()) << r.command_line << "\n" << r.output;
  return out;
}

TEST(DoctorLibrary, AGoodLibraryPasses) {
  TempDirectory dir;
  fs::path lib = build(dir.path(), "good.cc",
                       "#include <string>\nstd::string greet() { return std::string(40, 'k'); }\n");
  std::vector<Finding> findings = check_library(lib);
  for (const Finding& f : findings)
    EXPECT_EQ(f.status, Status::pass) << f.check << ": " << f.finding;
  std::optional<Finding> needs = named(findings, "Library");
  ASSERT_TRUE(needs);
  EXPECT_NE(needs->finding.find("libstdc++.so.6 => "), std::string::npos) << needs->finding;
  EXPECT_NE(needs->finding.find("libgcc_s.so.1 => "), std::string::npos) << needs->finding;
  EXPECT_FALSE(named(findings, "Library LLVM"));
}

TEST(DoctorLibrary, SharedLibLlvmWarns) {
  fs::path llvm_lib = "/usr/lib/llvm-14/lib";
  if (!internal::is_file(llvm_lib / "libLLVM-14.so")) GTEST_SKIP() << "no libLLVM-14.so";
  TempDirectory dir;
  fs::path lib = build(dir.path(), "codegen.c",
                       "void LLVMInitializeX86Target(void);\n"
                       "void init(void) { LLVMInitializeX86Target(); }\n",
                       {"-L" + llvm_lib.string(), "-lLLVM-14", "-Wl,--no-as-needed"});
  std::optional<Finding> llvm = named(check_library(lib), "Library LLVM");
  ASSERT_TRUE(llvm);
  EXPECT_EQ(llvm->status, Status::warn);
  EXPECT_NE(llvm->finding.find("libLLVM-14.so"), std::string::npos) << llvm->finding;
  EXPECT_NE(llvm->fix.find("--link-static"), std::string::npos) << llvm->fix;
}

TEST(DoctorLibrary, AnUnresolvedSymbolFailsNamingIt) {
  TempDirectory dir;
  fs::path lib = build(dir.path(), "broken.cc",
                       "namespace llvm { void create_alloca(int); }\n"
                       "void emit() { llvm::create_alloca(3); }\n");
  std::optional<Finding> symbols = named(check_library(lib), "Library symbols");
  ASSERT_TRUE(symbols);
  EXPECT_EQ(symbols->status, Status::fail);
  EXPECT_NE(symbols->finding.find("_ZN4llvm13create_allocaEi"), std::string::npos)
      << symbols->finding;
  EXPECT_NE(symbols->finding.find("llvm::create_alloca(int)"), std::string::npos)
      << symbols->finding;
  // What the dynamic linker says when it binds immediately: the same symbol.
  RunResult loaded =
      run({.argv = {"python3", "-c",
                    fmt::format("import ctypes; ctypes.CDLL('{}', mode=2)", lib.string())}});
  if (!loaded.ok()) {
    EXPECT_NE(loaded.output.find("_ZN4llvm13create_allocaEi"), std::string::npos) << loaded.output;
  }
}

// A copy of a real C++ library whose version need names a GLIBCXX version newer than any the
// system libstdc++ defines (same length, so the ELF stays well-formed).
TEST(DoctorLibrary, ANewerGlibcxxThanTheSystemsFails) {
  TempDirectory dir;
  fs::path lib = build(dir.path(), "modern.cc",
                       "#include <string>\n#include <stdexcept>\n"
                       "std::string twice(const std::string& s) { if (s.empty()) throw "
                       "std::runtime_error(\"empty\"); return s + s; }\n");
  ElfDynamicInfo info = read_elf_dynamic(lib);
  std::string needed;
  for (const ElfVersionNeed& need : info.version_needs) {
    if (need.file != "libstdc++.so.6") continue;
    for (const std::string& v : need.versions) {
      if (v.starts_with("GLIBCXX_3.4.") && v.size() > needed.size()) needed = v;
    }
  }
  ASSERT_FALSE(needed.empty()) << "the library needs no GLIBCXX_3.4.x version";
  std::string newer = needed;
  std::replace_if(
      newer.begin() + 8, newer.end(), [](char c) { return c != '.'; }, '9');
  std::string bytes = internal::read_file(lib);
  size_t edits = 0;
  for (size_t at = bytes.find(needed + '\0'); at != std::string::npos;
       at = bytes.find(needed + '\0', at + 1)) {
    bytes.replace(at, needed.size(), newer);
    ++edits;
  }
  ASSERT_GT(edits, 0u);
  fs::path copy = dir / "libmodern-edited.so";
  std::ofstream(copy, std::ios::binary) << bytes;

  std::vector<Finding> findings = check_library(copy);
  std::vector<Finding> versions;
  for (const Finding& f : findings) {
    if (f.check == "Library versions") versions.push_back(f);
  }
  ASSERT_EQ(versions.size(), 1u);
  EXPECT_EQ(versions[0].status, Status::fail);
  EXPECT_NE(versions[0].finding.find(newer), std::string::npos) << versions[0].finding;
  EXPECT_NE(versions[0].finding.find("libstdc++.so.6"), std::string::npos) << versions[0].finding;
  EXPECT_NE(versions[0].finding.find("newest GLIBCXX_* is GLIBCXX_3.4."), std::string::npos)
      << versions[0].finding;
}

TEST(DoctorLibrary, NotALibraryFails) {
  TempDirectory dir;
  std::ofstream(dir / "notes.txt") << "not ELF\n";
  std::vector<Finding> findings = check_library(dir / "notes.txt");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].status, Status::fail);
  EXPECT_NE(findings[0].finding.find("notes.txt"), std::string::npos) << findings[0].finding;
  findings = check_library(dir / "missing.so");
  EXPECT_EQ(findings[0].status, Status::fail);
  EXPECT_NE(findings[0].finding.find("missing.so"), std::string::npos) << findings[0].finding;
}

}  // namespace
}  // namespace kiln::doctor
