// The doctor's model of TVM's Python package (no Python runs): the preloads a library is judged
// with, the library search, TVM_LIBRARY_PATH / TVM_HOME, and conda's LLVM. The stand-in TVM
// install is testing/fake_tvm.h; python_probe_test.cc runs a real interpreter.
#include <gtest/gtest.h>

#include "doctor/python_checks.h"
#include "doctor/tvm_layout.h"
#include "internal/files.h"
#include "kiln/doctor.h"
#include "kiln/temp_directory.h"
#include "testing/fake_tvm.h"
#include "testing/findings.h"
#include "testing/test_support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;
using testing::build_shared_library;
using testing::FakeTvm;
using testing::finding_named;
using testing::ScopedEnv;
using testing::write_text;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- The package's preloads, modelled (no Python) ---

TEST(DoctorTvmPackage, TheCompilerIsJudgedWithTheFfiAndRuntimeLoadedFirst) {
  FakeTvm tvm;
  ScopedEnv library_path("TVM_LIBRARY_PATH", std::nullopt);
  // Alone, it needs a libtvm_ffi.so nothing finds: what the old check said about TVM 0.27.
  std::vector<Finding> alone = check_library(tvm.compiler, LoadContext{});
  EXPECT_EQ(finding_named(alone, "Library").status, Status::fail)
      << finding_named(alone, "Library").finding;
  EXPECT_TRUE(has(finding_named(alone, "Library").finding, "libtvm_ffi.so (needed by"));

  std::vector<Finding> findings = check_library(tvm.compiler);
  for (const Finding& f : findings) {
    EXPECT_EQ(f.status, Status::pass) << f.check << ": " << f.finding;
  }
  const Finding& needs = finding_named(findings, "Library");
  EXPECT_TRUE(has(needs.finding,
                  "libtvm_ffi.so => " + fs::canonical(tvm.ffi).string() + " (already loaded)"))
      << needs.finding;
  EXPECT_TRUE(has(needs.finding, "libtvm_runtime.so => " + fs::canonical(tvm.runtime).string() +
                                     " (already loaded)"))
      << needs.finding;
  EXPECT_TRUE(has(needs.finding, "modelled from its files")) << needs.finding;
}

TEST(DoctorTvmPackage, WithoutTheFfiPackageTheMissingLibraryIsStillFound) {
  FakeTvm tvm;
  fs::remove_all(tvm.site / "tvm_ffi");
  fs::remove_all(tvm.site / "apache_tvm_ffi-0.1.0.dist-info");
  std::vector<Finding> findings = check_library(tvm.compiler);
  const Finding& needs = finding_named(findings, "Library");
  EXPECT_EQ(needs.status, Status::fail);
  EXPECT_TRUE(has(needs.finding, "libtvm_ffi.so (needed by")) << needs.finding;
  EXPECT_TRUE(has(needs.finding, "no tvm_ffi package found")) << needs.finding;
}

TEST(DoctorTvmPackage, LayoutsAndTheSearch) {
  FakeTvm tvm;
  EXPECT_EQ(detail::tvm_package_of(tvm.compiler), tvm.package);
  EXPECT_FALSE(detail::tvm_package_of(tvm.ffi));
  EXPECT_FALSE(tvm_package_context(tvm.root / "libtvm.so"));
  // A source tree: build/lib/ beside python/tvm/.
  write_text(tvm.root / "tree" / "python" / "tvm" / "__init__.py", "");
  EXPECT_EQ(detail::tvm_package_of(tvm.root / "tree" / "build" / "lib" / "libtvm.so"),
            tvm.root / "tree" / "python" / "tvm");
  EXPECT_TRUE(detail::is_tvm_library("libtvm_compiler.so"));
  EXPECT_FALSE(detail::is_tvm_library("libtvm_ffi_testing.so"));
  EXPECT_FALSE(detail::is_tvm_library("libtvm_compiler.py"));

  TempDirectory alt;
  fs::copy_file(tvm.runtime, alt / "libtvm_runtime.so");
  ScopedEnv library_path("TVM_LIBRARY_PATH", alt.path().string());
  std::optional<detail::FoundLibrary> found =
      detail::find_in(detail::tvm_search_dirs(tvm.package), "libtvm_runtime.so");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->path, fs::canonical(alt / "libtvm_runtime.so"));
  EXPECT_EQ(found->origin, "TVM_LIBRARY_PATH");
}

// --- The environment variables (no Python) ---

TEST(DoctorPythonEnv, TvmLibraryPathRelativeNowhereOrAFile) {
  TempDirectory dir;
  build_shared_library(dir / "build" / "libtvm_runtime.so", "int r(void) { return 0; }\n");
  {
    ScopedEnv unset("TVM_LIBRARY_PATH", std::nullopt);
    EXPECT_EQ(detail::tvm_library_path_finding(nullptr).status, Status::pass);
  }
  {
    ScopedEnv good("TVM_LIBRARY_PATH", (dir / "build").string());
    Finding f = detail::tvm_library_path_finding(nullptr);
    EXPECT_EQ(f.status, Status::pass) << f.finding;
    EXPECT_TRUE(has(f.finding, "libtvm_runtime.so")) << f.finding;
  }
  {
    std::string relative = fs::relative(dir / "build", fs::current_path()).string();
    ASSERT_TRUE(fs::path(relative).is_relative());
    ScopedEnv rel("TVM_LIBRARY_PATH", relative);
    Finding f = detail::tvm_library_path_finding(nullptr);
    EXPECT_EQ(f.status, Status::warn) << f.finding;
    EXPECT_TRUE(has(f.finding, "is relative")) << f.finding;
    EXPECT_TRUE(has(f.fix, (dir / "build").string())) << f.fix;
  }
  {
    ScopedEnv nowhere("TVM_LIBRARY_PATH", (dir / "nowhere").string());
    Finding f = detail::tvm_library_path_finding(nullptr);
    EXPECT_EQ(f.status, Status::warn);
    EXPECT_TRUE(has(f.finding, "points nowhere")) << f.finding;
  }
  {
    ScopedEnv empty_dir("TVM_LIBRARY_PATH", dir.path().string());
    EXPECT_TRUE(has(detail::tvm_library_path_finding(nullptr).finding, "holds no"));
  }
  ScopedEnv file("TVM_LIBRARY_PATH", (dir / "build" / "libtvm_runtime.so").string());
  Finding f = detail::tvm_library_path_finding(nullptr);
  EXPECT_EQ(f.status, Status::warn);
  EXPECT_TRUE(has(f.finding, "names a file")) << f.finding;
  EXPECT_EQ(f.fix, "export TVM_LIBRARY_PATH=" + (dir / "build").string());
}

TEST(DoctorPythonEnv, TvmHomeRelativeNowhereOrNotATree) {
  TempDirectory dir;
  fs::create_directories(dir / "tvm" / "include" / "tvm");
  {
    ScopedEnv home("TVM_HOME", (dir / "tvm").string());
    EXPECT_EQ(detail::tvm_home_finding(nullptr).status, Status::pass);
  }
  {
    ScopedEnv home("TVM_HOME", fs::relative(dir / "tvm", fs::current_path()).string());
    Finding f = detail::tvm_home_finding(nullptr);
    EXPECT_EQ(f.status, Status::warn);
    EXPECT_TRUE(has(f.finding, "is relative")) << f.finding;
  }
  {
    ScopedEnv home("TVM_HOME", (dir / "gone").string());
    Finding f = detail::tvm_home_finding(nullptr);
    EXPECT_EQ(f.status, Status::warn);
    EXPECT_TRUE(has(f.finding, "points nowhere")) << f.finding;
  }
  ScopedEnv home("TVM_HOME", dir.path().string());
  Finding f = detail::tvm_home_finding(nullptr);
  EXPECT_EQ(f.status, Status::warn);
  EXPECT_TRUE(has(f.finding, "not a TVM source tree")) << f.finding;
}

// --- Conda's LLVM (fake tools are real programs: scripts printing a version) ---

void fake_llvm_config(const fs::path& bin, const std::string& version) {
  write_text(bin / "llvm-config", "#!/bin/sh\necho " + version + "\n");
  fs::permissions(bin / "llvm-config", fs::perms::owner_all);
}

TEST(DoctorConda, LlvmdevFirstOnPathShadowsTheSystemLlvm) {
  TempDirectory dir;
  fs::path conda = dir / "envs" / "tvm-build";
  write_text(conda / "conda-meta" / "llvmdev-15.0.7-h123_0.json", "{}");
  fake_llvm_config(conda / "bin", "15.0.7");
  fake_llvm_config(dir / "system" / "bin", "14.0.6");
  ScopedEnv prefix("CONDA_PREFIX", conda.string());
  {
    ScopedEnv path("PATH", (conda / "bin").string() + ":" + (dir / "system" / "bin").string());
    Finding f = detail::conda_llvm_finding(nullptr);
    EXPECT_EQ(f.status, Status::warn) << f.finding;
    EXPECT_TRUE(has(f.finding, "llvmdev 15.0.7")) << f.finding;
    EXPECT_TRUE(has(f.finding, "system LLVM 14.0.6")) << f.finding;
    EXPECT_TRUE(has(f.fix, (dir / "system" / "bin" / "llvm-config").string())) << f.fix;
  }
  {
    ScopedEnv path("PATH", (dir / "system" / "bin").string() + ":" + (conda / "bin").string());
    Finding f = detail::conda_llvm_finding(nullptr);
    EXPECT_EQ(f.status, Status::pass) << f.finding;
    EXPECT_TRUE(has(f.finding, "does not shadow")) << f.finding;
  }
  // What an import mapped: conda's libLLVM next to a TVM built with LLVM 14 (a report as the
  // probe gives it).
  build_shared_library(conda / "lib" / "libLLVM-15.so", "int llvm15(void) { return 15; }\n");
  detail::PythonReport report{.python = "python3"};
  report.pre = report.imported = report.import_ok = true;
  report.libinfo["LLVM_VERSION"] = "14.0.6";
  report.mapped = {conda / "lib" / "libLLVM-15.so"};
  Finding f = detail::conda_llvm_finding(&report);
  EXPECT_EQ(f.status, Status::fail) << f.finding;
  EXPECT_TRUE(has(f.finding, "libLLVM-15.so")) << f.finding;
  EXPECT_TRUE(has(f.finding, "built with LLVM 14.0.6")) << f.finding;
}

TEST(DoctorConda, NoCondaNoLlvm) {
  TempDirectory dir;
  ScopedEnv unset("CONDA_PREFIX", std::nullopt);
  EXPECT_EQ(detail::conda_llvm_finding(nullptr).status, Status::pass);
  fs::create_directories(dir / "conda-meta");
  ScopedEnv prefix("CONDA_PREFIX", dir.path().string());
  Finding f = detail::conda_llvm_finding(nullptr);
  EXPECT_EQ(f.status, Status::pass);
  EXPECT_TRUE(has(f.finding, "holds no LLVM")) << f.finding;
}

// --- The policy on hand-made reports (what the probe would print) ---

TEST(DoctorPythonReport, ProbeOutputIsReadDefensively) {
  detail::PythonReport report{.python = "python3"};
  report.run.output =
      "noise from the package\nKILN-DOCTOR-PROBE {not json\nKILN-DOCTOR-PROBE [1, 2]\n"
      "KILN-DOCTOR-PROBE {\"phase\": \"pre\", \"tvm\": 7, \"version\": [3, \"x\", 11],"
      " \"path\": \"not a list\", \"cwd\": \"/work\"}\n"
      "KILN-DOCTOR-PROBE {\"phase\": \"import\", \"ok\": true, \"loaded\": [], \"mapped\": "
      "[\"/lib/libtvm_runtime.so\", 3], \"skipped\": {\"tvm_compiler\": 1}}\n";
  detail::read_probe_output(report);
  EXPECT_TRUE(report.pre);
  EXPECT_FALSE(report.tvm);  // not a string: no tvm
  EXPECT_EQ(report.version, (std::vector<int>{3, 11}));
  EXPECT_TRUE(report.sys_path.empty());
  EXPECT_TRUE(report.imported && report.import_ok);
  EXPECT_EQ(report.mapped, std::vector<fs::path>{"/lib/libtvm_runtime.so"});
  EXPECT_TRUE(report.loaded.empty());
  EXPECT_TRUE(report.skipped.empty());
  EXPECT_EQ(detail::python_package_finding(report).status, Status::warn);  // no tvm found

  detail::PythonReport odd{.python = "python3"};
  odd.run.output = "KILN-DOCTOR-PROBE {\"phase\": \"import\", \"ok\": \"yes\", \"pid\": []}\n";
  detail::read_probe_output(odd);
  EXPECT_TRUE(odd.imported);
  EXPECT_FALSE(odd.import_ok);
}

TEST(DoctorPythonReport, TwoCopiesOfOneTvmLibraryFail) {
  FakeTvm tvm;
  TempDirectory other;
  fs::copy_file(tvm.runtime, other / "libtvm_runtime.so");
  detail::PythonReport report{.python = "python3"};
  report.pre = report.imported = report.import_ok = true;
  report.tvm = tvm.package / "__init__.py";
  report.mapped = {tvm.ffi, tvm.runtime, other / "libtvm_runtime.so"};
  std::vector<Finding> findings = detail::tvm_libraries_findings(report);
  const Finding& libraries = finding_named(findings, "TVM libraries");
  EXPECT_EQ(libraries.status, Status::fail) << libraries.finding;
  EXPECT_TRUE(has(libraries.finding, "libtvm_runtime.so is loaded twice")) << libraries.finding;
  EXPECT_FALSE(libraries.fix.empty());
}

}  // namespace
}  // namespace kiln::doctor
