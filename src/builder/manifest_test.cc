#include "kiln/manifest.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::build {
namespace {

namespace fs = std::filesystem;
using kiln::testing::error_of;

// Whether `text` contains `part`, saying both when it does not.
::testing::AssertionResult has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << '"';
}

// The manifest of the issue, one job of each kind but executable, wasm and rocm-co.
constexpr const char* kIssueExample = R"json(
{ "defaults": { "timeout": 60, "cc": "gcc", "options": [] },
  "jobs": [
    { "name": "add",     "kind": "shared",   "sources": ["add.c"], "options": ["-O2"] },
    { "name": "add_o",   "kind": "object",   "code": "int add(int a,int b){return a+b;}", "language": "c" },
    { "name": "libadd",  "kind": "static",   "inputs": ["@add_o"] },
    { "name": "gemm",    "kind": "cuda",     "sources": ["gemm.cu"], "arch": "sm_90a", "format": "cubin", "backend": "nvrtc" },
    { "name": "ir",      "kind": "llvm-ir",  "sources": ["f.c"] },
    { "name": "arm",     "kind": "shared",   "sources": ["add.c"], "cc": "aarch64-linux-gnu-gcc" },
    { "name": "bundle",  "kind": "tar",      "inputs": ["@add", "@gemm"] } ] }
)json";

class ManifestTest : public ::testing::Test {
 protected:
  ManifestTest() {
    for (const char* file : {"add.c", "gemm.cu", "f.c", "k.cl", "main.cc", "notes.txt"}) {
      write(file);
    }
  }

  fs::path write(const std::string& name, const std::string& content = "") const {
    fs::path path = tmp_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
    return path;
  }

  Manifest parse(const std::string& text) const {
    return parse_manifest_text(text, tmp_.path(), "test.json");
  }

  // The message of the error that parsing a manifest with these jobs throws.
  std::string error(const std::string& jobs) const {
    return error_of([&] { parse(R"({"jobs": [)" + jobs + "]}"); });
  }

  TempDirectory tmp_;
};

using ManifestErrors = ManifestTest;

TEST_F(ManifestTest, IssueExampleParses) {
  Manifest m = parse(kIssueExample);
  EXPECT_EQ(m.file, fs::path());
  EXPECT_EQ(m.directory, tmp_.path());
  ASSERT_EQ(m.jobs.size(), 7U);

  const Job& add = m.jobs[0];
  EXPECT_EQ(add.name, "add");
  EXPECT_EQ(add.kind, JobKind::shared);
  EXPECT_EQ(add.sources, std::vector<fs::path>{tmp_ / "add.c"});
  EXPECT_EQ(add.language, Language::c);
  EXPECT_EQ(add.options, std::vector<std::string>{"-O2"});
  EXPECT_EQ(add.timeout_seconds, 60);
  EXPECT_EQ(add.cc, "gcc");
  EXPECT_EQ(add.output_name(), "add.so");

  const Job& add_o = m.jobs[1];
  EXPECT_EQ(add_o.kind, JobKind::object);
  EXPECT_TRUE(add_o.sources.empty());
  EXPECT_EQ(add_o.code, "int add(int a,int b){return a+b;}");
  EXPECT_EQ(add_o.language, Language::c);
  EXPECT_EQ(add_o.output_name(), "add_o.o");

  const Job& libadd = m.jobs[2];
  EXPECT_EQ(libadd.kind, JobKind::static_library);
  ASSERT_EQ(libadd.inputs.size(), 1U);
  EXPECT_EQ(libadd.inputs[0].job, "add_o");
  EXPECT_TRUE(libadd.inputs[0].file.empty());
  EXPECT_EQ(libadd.deps, std::vector<std::string>{"add_o"});
  EXPECT_EQ(libadd.output_name(), "libadd.a");

  const Job& gemm = m.jobs[3];
  EXPECT_EQ(gemm.language, Language::cuda);
  EXPECT_EQ(gemm.arch, "sm_90a");
  EXPECT_EQ(gemm.format, cuda::Format::cubin);
  EXPECT_EQ(gemm.backend, cuda::Backend::nvrtc);
  EXPECT_EQ(gemm.cc, "");  // the defaults' cc is for C/C++ compiles
  EXPECT_EQ(gemm.output_name(), "gemm.cubin");

  const Job& ir = m.jobs[4];
  EXPECT_EQ(ir.kind, JobKind::llvm_ir);
  EXPECT_EQ(ir.cc, "");  // clang is found by kiln::clang, gcc cannot emit LLVM IR
  EXPECT_EQ(ir.output_name(), "ir.ll");

  EXPECT_EQ(m.jobs[5].cc, "aarch64-linux-gnu-gcc");
  EXPECT_EQ(m.jobs[5].output_name(), "arm.so");

  const Job& bundle = m.jobs[6];
  EXPECT_EQ(bundle.deps, (std::vector<std::string>{"add", "gemm"}));
  EXPECT_EQ(bundle.output_name(), "bundle.tar");

  EXPECT_EQ(m.order, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m.index_of("gemm"), 3U);
  EXPECT_EQ(m.index_of("nope"), std::nullopt);
}

// The example of kiln/manifest.h, from a file.
TEST_F(ManifestTest, HeaderExampleReadsAFileBesideItsSources) {
  write("examples/add.c");
  fs::path file = write("examples/kiln.json", R"json({"jobs": [
      {"name": "lib", "kind": "shared", "inputs": ["@add"]},
      {"name": "add", "kind": "object", "sources": ["add.c"]}]})json");
  Manifest manifest = parse_manifest(file);
  std::ostringstream out;
  for (std::size_t i : manifest.order) {
    const Job& job = manifest.jobs[i];
    out << kind_name(job.kind) << ' ' << job.output_name().string() << '\n';
  }
  EXPECT_EQ(out.str(), "object add.o\nshared lib.so\n");
  EXPECT_EQ(manifest.file, file);
  EXPECT_EQ(manifest.directory, tmp_ / "examples");
  EXPECT_EQ(manifest.jobs[1].sources[0], tmp_ / "examples/add.c");
  EXPECT_TRUE(manifest.jobs[0].sources.empty());  // a link-only job compiles nothing
  EXPECT_EQ(manifest.jobs[0].language, std::nullopt);
}

TEST_F(ManifestTest, MissingFileIsFileNotFound) {
  EXPECT_THROW(parse_manifest(tmp_ / "none.json"), FileNotFound);
  EXPECT_THROW(parse_manifest(tmp_.path()), ManifestError);
}

TEST_F(ManifestTest, EveryKindWithItsOutputName) {
  write("lib/prebuilt.o");
  Manifest m = parse(R"json({"jobs": [
      {"name": "o", "kind": "object", "sources": ["./lib/../add.c"]},
      {"name": "so", "kind": "shared", "sources": ["add.c", "main.cc"], "inputs": ["@o", "lib/prebuilt.o"]},
      {"name": "exe", "kind": "executable", "sources": ["main.cc"], "inputs": ["@so"]},
      {"name": "a", "kind": "static", "inputs": ["@o"]},
      {"name": "ll", "kind": "llvm-ir", "code": "int f(void);", "language": "c"},
      {"name": "ptx", "kind": "cuda", "code": "__global__ void k() {}", "backend": "nvcc"},
      {"name": "fat", "kind": "cuda", "sources": ["gemm.cu"], "format": "fatbin", "backend": "nvcc"},
      {"name": "co", "kind": "rocm-co", "sources": ["k.cl"], "arch": "gfx90a"},
      {"name": "w", "kind": "wasm", "sources": ["add.c"]},
      {"name": "t", "kind": "tar", "inputs": ["@exe", "notes.txt"]}]})json");
  std::vector<std::string> names;
  for (const Job& job : m.jobs) names.push_back(job.output_name().string());
  EXPECT_EQ(names, (std::vector<std::string>{"o.o", "so.so", "exe", "a.a", "ll.ll", "ptx.ptx",
                                             "fat.fatbin", "co.hsaco", "w.wasm", "t.tar"}));
  EXPECT_EQ(m.jobs[0].sources[0], tmp_ / "add.c");  // lexically normal
  EXPECT_EQ(m.jobs[1].language, Language::c);       // from the first source
  EXPECT_EQ(m.jobs[1].inputs[1].file, tmp_ / "lib/prebuilt.o");
  EXPECT_TRUE(m.jobs[1].inputs[1].job.empty());
  EXPECT_EQ(m.jobs[2].language, Language::cxx);
  EXPECT_EQ(m.jobs[5].language, Language::cuda);      // implied by the kind
  EXPECT_EQ(m.jobs[5].format, cuda::Format::ptx);     // nvcc's default, as kiln::cuda's
  EXPECT_EQ(m.jobs[6].format, cuda::Format::fatbin);  // NVRTC (the default backend) makes none
  EXPECT_EQ(m.jobs[7].language, Language::opencl);
  EXPECT_EQ(m.jobs[7].arch, "gfx90a");
  EXPECT_EQ(m.jobs[9].inputs[1].file, tmp_ / "notes.txt");
}

TEST_F(ManifestTest, DefaultsApplyToTheKindsTheyFit) {
  Manifest m = parse(R"json({
    "defaults": {"timeout": 5, "cc": "clang", "launcher": "ccache", "options": ["-O3"],
                 "toolchain": "ndk", "arch": "sm_80", "format": "ptx", "backend": "nvcc"},
    "jobs": [
      {"name": "so", "kind": "shared", "sources": ["add.c"], "options": ["-g"], "timeout": 0},
      {"name": "a", "kind": "static", "inputs": ["@o"], "toolchain": "host"},
      {"name": "k", "kind": "cuda", "sources": ["gemm.cu"], "options": ["-lineinfo"]},
      {"name": "co", "kind": "rocm-co", "sources": ["k.cl"]},
      {"name": "t", "kind": "tar", "inputs": ["@k"], "timeout": 1.5},
      {"name": "o", "kind": "object", "sources": ["add.c"]}]})json");
  const Job& so = m.jobs[0];
  EXPECT_EQ(so.options, (std::vector<std::string>{"-O3", "-g"}));
  EXPECT_EQ(so.timeout_seconds, 0);
  EXPECT_TRUE(so.timeout_given) << "the defaults' timeout is given too";
  EXPECT_EQ(so.cc, "clang");
  EXPECT_EQ(so.launcher, LauncherKind::ccache);
  EXPECT_EQ(so.toolchain, Toolchain::ndk);
  EXPECT_EQ(so.arch, "");
  EXPECT_EQ(m.jobs[1].toolchain, Toolchain::host);
  EXPECT_EQ(m.jobs[1].timeout_seconds, 5);
  const Job& k = m.jobs[2];
  EXPECT_EQ(k.options, std::vector<std::string>{"-lineinfo"});  // host options are not nvcc's
  EXPECT_EQ(k.cc, "");
  EXPECT_EQ(k.launcher, LauncherKind::ccache);  // as --launcher: nvcc jobs may go through sccache
  EXPECT_EQ(k.arch, "sm_80");
  EXPECT_EQ(k.format, cuda::Format::ptx);
  EXPECT_EQ(k.backend, cuda::Backend::nvcc);
  EXPECT_EQ(m.jobs[3].arch, "");  // a defaults' arch is a CUDA arch
  EXPECT_EQ(m.jobs[4].timeout_seconds, 1.5);
}

TEST_F(ManifestTest, NoDefaultsMeansSixtySeconds) {
  Manifest m =
      parse(R"json({"jobs": [{"name": "o", "kind": "object", "sources": ["add.c"]}]})json");
  EXPECT_EQ(m.jobs[0].timeout_seconds, kDefaultTimeoutSeconds);
  EXPECT_FALSE(m.jobs[0].timeout_given) << "kiln build may give a distributed job longer";
  EXPECT_TRUE(m.jobs[0].options.empty());
  EXPECT_EQ(parse(R"({"jobs": []})").jobs.size(), 0U);
}

TEST_F(ManifestTest, OrderPutsDependenciesFirstAndOtherwiseKeepsManifestOrder) {
  Manifest m = parse(R"json({"jobs": [
      {"name": "t", "kind": "tar", "inputs": ["@so", "@b"]},
      {"name": "c", "kind": "object", "sources": ["add.c"]},
      {"name": "so", "kind": "shared", "inputs": ["@b"], "deps": ["c", "b"]},
      {"name": "b", "kind": "object", "sources": ["add.c"]},
      {"name": "d", "kind": "object", "sources": ["add.c"]}]})json");
  EXPECT_EQ(m.jobs[2].deps, (std::vector<std::string>{"b", "c"}));  // each once
  EXPECT_EQ(m.order, (std::vector<std::size_t>{1, 3, 2, 0, 4}));
}

TEST_F(ManifestTest, KindNamesRoundTrip) {
  for (const auto& [kind, name] : kJobKindNames) EXPECT_EQ(kind_from_name(kind_name(kind)), kind);
  EXPECT_EQ(kind_name(JobKind::static_library), "static");
  EXPECT_EQ(kind_name(JobKind::rocm_code_object), "rocm-co");
  EXPECT_EQ(kind_from_name("dll"), std::nullopt);
}

TEST_F(ManifestTest, LanguageOfExtensions) {
  EXPECT_EQ(language_of("a.c"), Language::c);
  for (const char* file : {"a.cc", "a.cpp", "a.cxx", "a.c++", "a.C"}) {
    EXPECT_EQ(language_of(file), Language::cxx) << file;
  }
  EXPECT_EQ(language_of("a.cu"), Language::cuda);
  EXPECT_EQ(language_of("a.ll"), Language::llvm_ir);
  EXPECT_EQ(language_of("a.s"), Language::assembly);
  EXPECT_EQ(language_of("a.S"), Language::assembly);
  EXPECT_EQ(language_of("a.cl"), Language::opencl);
  EXPECT_EQ(language_of("a.o"), std::nullopt);
  EXPECT_EQ(language_of("Makefile"), std::nullopt);
}

TEST_F(ManifestErrors, JsonSyntaxErrorHasLineAndColumn) {
  std::string message = error_of([&] { parse("{\"jobs\": [\n  {\"name\": x}]}"); });
  EXPECT_TRUE(has(message, "manifest test.json: line 2, column 12: invalid JSON: "));
  EXPECT_TRUE(has(message, "syntax error"));
  message = error_of([&] { parse("{\"jobs\": [\n"); });
  EXPECT_TRUE(has(message, "line 2, column 1:"));  // one past the end
  EXPECT_THROW(parse("{"), ManifestError);
}

TEST_F(ManifestErrors, TopLevel) {
  EXPECT_EQ(error_of([&] { parse("[]"); }),
            "manifest test.json: the top level must be a JSON object, not an array");
  EXPECT_EQ(error_of([&] { parse(R"({"jobs": [], "job": []})"); }),
            "manifest test.json: key \"job\" is not a known key (known keys: defaults, jobs)");
  EXPECT_EQ(error_of([&] { parse("{}"); }), "manifest test.json: key \"jobs\" is required");
  EXPECT_TRUE(has(error_of([&] { parse(R"({"jobs": {}})"); }),
                  "key \"jobs\": must be an array of jobs, not an object"));
}

TEST_F(ManifestErrors, Defaults) {
  EXPECT_TRUE(has(error_of([&] { parse(R"({"defaults": [], "jobs": []})"); }),
                  "key \"defaults\": must be an object, not an array"));
  EXPECT_TRUE(has(error_of([&] { parse(R"({"defaults": {"sources": []}, "jobs": []})"); }),
                  "defaults: key \"sources\" is not a known key (known keys: timeout, cc, "
                  "launcher, options, toolchain, arch, format, backend)"));
  EXPECT_TRUE(has(error_of([&] { parse(R"({"defaults": {"launcher": "make"}, "jobs": []})"); }),
                  "defaults: key \"launcher\": \"make\" is not a launcher (one of ccache, "
                  "sccache, distcc, icecc)"));
  EXPECT_TRUE(has(error_of([&] { parse(R"({"defaults": {"timeout": -1}, "jobs": []})"); }),
                  "defaults: key \"timeout\": must be a non-negative number"));
  EXPECT_TRUE(has(error_of([&] { parse(R"({"defaults": {"arch": "gfx90a"}, "jobs": []})"); }),
                  "defaults: key \"arch\": \"gfx90a\" is not a CUDA arch"));
}

TEST_F(ManifestErrors, JobMustBeAnObject) {
  EXPECT_EQ(error(R"("add")"), "manifest test.json: job 0: must be an object, not a string");
}

TEST_F(ManifestErrors, NameIsRequiredAndBecomesAFileName) {
  EXPECT_EQ(error(R"({"kind": "object"})"), "manifest test.json: job 0: key \"name\" is required");
  EXPECT_EQ(error(R"({"name": 3})"),
            "manifest test.json: job 0: key \"name\": must be a string, not a number");
  EXPECT_TRUE(has(error(R"({"name": ""})"), "job 0: key \"name\": must not be empty"));
  for (std::string bad : {"a/b", ".hidden", "a b", "@x", "x:y"}) {
    EXPECT_TRUE(has(error(R"({"kind": "object", "name": ")" + bad + "\"}"),
                    "job 0: key \"name\": \"" + bad + "\" is not a valid job name"));
  }
}

TEST_F(ManifestErrors, DuplicateNamesNameBothIndexes) {
  EXPECT_EQ(error(R"({"name": "a", "kind": "object", "sources": ["add.c"]},
                     {"name": "b", "kind": "object", "sources": ["add.c"]},
                     {"name": "a", "kind": "shared", "sources": ["add.c"]})"),
            "manifest test.json: job \"a\": key \"name\": jobs 0 and 2 are both named \"a\"");
}

TEST_F(ManifestErrors, SameOutputFileFromTwoJobs) {
  EXPECT_EQ(error(R"({"name": "a.so", "kind": "executable", "sources": ["add.c"]},
                     {"name": "a", "kind": "shared", "sources": ["add.c"]})"),
            "manifest test.json: job \"a\": key \"name\": its output 'a.so' is also the output "
            "of job 0");
}

TEST_F(ManifestErrors, KindIsRequiredAndKnown) {
  EXPECT_EQ(error(R"({"name": "a"})"), "manifest test.json: job \"a\": key \"kind\" is required");
  EXPECT_EQ(error(R"({"name": "a", "kind": "dll"})"),
            "manifest test.json: job \"a\": key \"kind\": \"dll\" is not a kind (kinds: object, "
            "shared, executable, static, llvm-ir, cuda, rocm-co, wasm and tar)");
}

TEST_F(ManifestErrors, UnknownKeyListsTheKnownOnes) {
  EXPECT_EQ(error(R"({"name": "gemm", "kind": "cuda", "sources": ["gemm.cu"], "formt": "ptx"})"),
            "manifest test.json: job \"gemm\": key \"formt\" is not a known key (known keys: "
            "name, kind, sources, code, language, inputs, deps, options, timeout, cc, launcher, "
            "toolchain, arch, format, backend)");
}

TEST_F(ManifestErrors, KeysThatDoNotApplyToTheKind) {
  EXPECT_EQ(error(R"({"name": "ir", "kind": "llvm-ir", "sources": ["f.c"], "arch": "sm_80"})"),
            "manifest test.json: job \"ir\": key \"arch\" applies to cuda and rocm-co jobs, not "
            "to llvm-ir jobs");
  EXPECT_TRUE(
      has(error(R"({"name": "co", "kind": "rocm-co", "sources": ["k.cl"], "format": "ptx"})"),
          "job \"co\": key \"format\" applies to cuda jobs, not to rocm-co jobs"));
  EXPECT_TRUE(
      has(error(R"({"name": "a", "kind": "static", "sources": ["add.c"], "inputs": ["x"]})"),
          "job \"a\": key \"sources\" applies to object, shared, executable, "
          "llvm-ir, cuda, rocm-co and wasm jobs, not to static jobs"));
  EXPECT_TRUE(
      has(error(R"({"name": "o", "kind": "object", "sources": ["add.c"], "inputs": ["x"]})"),
          "job \"o\": key \"inputs\" applies to shared, executable, static, wasm "
          "and tar jobs, not to object jobs"));
  EXPECT_TRUE(has(error(R"({"name": "t", "kind": "tar", "inputs": ["add.c"], "options": ["-O2"]})"),
                  "job \"t\": key \"options\" applies to"));
}

TEST_F(ManifestErrors, TypesAreChecked) {
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "object", "sources": "add.c"})"),
                  "job \"a\": key \"sources\": must be an array of strings, not a string"));
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "object", "sources": ["add.c"], "options": [1]})"),
                  "job \"a\": key \"options\": element 0 must be a string, not a number"));
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "object", "sources": ["add.c"], "cc": true})"),
                  "job \"a\": key \"cc\": must be a string, not a boolean"));
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "object", "sources": ["add.c"], "timeout": "9"})"),
                  "job \"a\": key \"timeout\": must be a number of seconds, not a string"));
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "object", "sources": ["add.c"], "timeout": -2})"),
                  "job \"a\": key \"timeout\": must be a non-negative number of seconds "
                  "(0: no limit), not -2"));
  EXPECT_EQ(error_of([&] { parse(R"({"jobs": [], "defaults": {"timeout": 1e999}})"); }),
            "manifest test.json: invalid JSON: number overflow parsing '1e999'");
}

TEST_F(ManifestErrors, SourcesOrCode) {
  EXPECT_EQ(error(R"({"name": "a", "kind": "object"})"),
            "manifest test.json: job \"a\": key \"sources\" is required for object jobs (or "
            "\"code\")");
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "shared"})"),
                  "job \"a\": key \"sources\" is required for shared jobs (or \"code\", or "
                  "\"inputs\")"));
  EXPECT_EQ(error(R"({"name": "a", "kind": "object", "sources": ["add.c"], "code": "int x;"})"),
            "manifest test.json: job \"a\": key \"code\": a job takes \"sources\" or \"code\", "
            "not both");
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "shared", "sources": []})"),
                  "job \"a\": key \"sources\": must not be empty"));
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "shared", "code": ""})"),
                  "job \"a\": key \"code\": must not be empty"));
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "object", "sources": ["add.c", "f.c"]})"),
                  "job \"a\": key \"sources\": object jobs take exactly one source, not 2"));
}

TEST_F(ManifestErrors, MissingSourceNamesTheResolvedPath) {
  EXPECT_EQ(error(R"({"name": "a", "kind": "shared", "sources": ["add.c", "sub/../none.c"]})"),
            "manifest test.json: job \"a\": key \"sources\": '" + (tmp_ / "none.c").string() +
                "' does not exist");
  fs::create_directory(tmp_ / "dir.c");
  EXPECT_EQ(error(R"({"name": "a", "kind": "object", "sources": ["dir.c"]})"),
            "manifest test.json: job \"a\": key \"sources\": '" + (tmp_ / "dir.c").string() +
                "' is not a regular file");
  EXPECT_TRUE(has(error(R"({"name": "a", "kind": "shared", "sources": ["add.c", ""]})"),
                  "job \"a\": key \"sources\": element 1 is empty"));
}

TEST_F(ManifestErrors, MissingInputFileNamesTheResolvedPath) {
  EXPECT_EQ(error(R"({"name": "t", "kind": "tar", "inputs": ["add.c", "gone.o"]})"),
            "manifest test.json: job \"t\": key \"inputs\": '" + (tmp_ / "gone.o").string() +
                "' does not exist");
}

TEST_F(ManifestErrors, StaticAndTarNeedInputs) {
  EXPECT_EQ(error(R"({"name": "a", "kind": "static"})"),
            "manifest test.json: job \"a\": key \"inputs\": static jobs need at least one input");
  EXPECT_TRUE(has(error(R"({"name": "t", "kind": "tar", "inputs": []})"),
                  "job \"t\": key \"inputs\": tar jobs need at least one input"));
}

TEST_F(ManifestErrors, InputsOfTheWrongKind) {
  EXPECT_EQ(error(R"({"name": "so", "kind": "shared", "sources": ["add.c"]},
                     {"name": "a", "kind": "static", "inputs": ["@so"]})"),
            "manifest test.json: job \"a\": key \"inputs\": \"@so\" is a shared job; static jobs "
            "take the outputs of object or tar jobs");
}

TEST_F(ManifestErrors, LanguageFromExtensionOrKey) {
  EXPECT_EQ(error(R"({"name": "a", "kind": "object", "sources": ["notes.txt"]})"),
            "manifest test.json: job \"a\": key \"sources\": cannot tell the language of '" +
                (tmp_ / "notes.txt").string() +
                "' from its extension; add \"language\" (c, c++, asm or cuda)");
  EXPECT_EQ(error(R"({"name": "ir", "kind": "llvm-ir", "sources": ["gemm.cu"]})"),
            "manifest test.json: job \"ir\": key \"sources\": llvm-ir jobs compile c or c++, not "
            "cuda ('gemm.cu')");
  EXPECT_TRUE(has(error(R"({"name": "k", "kind": "cuda", "sources": ["add.c"]})"),
                  "job \"k\": key \"sources\": cuda jobs compile cuda, not c ('add.c')"));
  EXPECT_TRUE(has(error(R"({"name": "w", "kind": "wasm", "code": "x", "language": "asm"})"),
                  "job \"w\": key \"language\": wasm jobs compile c or c++, not asm"));
  EXPECT_TRUE(has(error(R"({"name": "o", "kind": "object", "code": "x", "language": "fortran"})"),
                  "job \"o\": key \"language\": \"fortran\" is not a language"));
  EXPECT_EQ(error(R"({"name": "o", "kind": "object", "code": "int x;"})"),
            "manifest test.json: job \"o\": key \"language\" is required with \"code\" in object "
            "jobs (c, c++, asm or cuda)");
}

TEST_F(ManifestErrors, UnknownJobInInputsOrDeps) {
  EXPECT_EQ(error(R"({"name": "t", "kind": "tar", "inputs": ["@nope"]})"),
            "manifest test.json: job \"t\": key \"inputs\": there is no job \"nope\"");
  EXPECT_EQ(error(R"({"name": "o", "kind": "object", "sources": ["add.c"], "deps": ["nope"]})"),
            "manifest test.json: job \"o\": key \"deps\": there is no job \"nope\"");
  EXPECT_TRUE(has(error(R"({"name": "o", "kind": "object", "sources": ["add.c"], "deps": ["@o"]})"),
                  "job \"o\": key \"deps\": there is no job \"@o\" (\"deps\" takes plain "
                  "job names)"));
}

TEST_F(ManifestErrors, JobDependingOnItself) {
  EXPECT_EQ(error(R"({"name": "t", "kind": "tar", "inputs": ["@t"]})"),
            "manifest test.json: job \"t\": key \"inputs\": job \"t\" depends on itself");
  EXPECT_EQ(error(R"({"name": "o", "kind": "object", "sources": ["add.c"], "deps": ["o"]})"),
            "manifest test.json: job \"o\": key \"deps\": job \"o\" depends on itself");
}

TEST_F(ManifestErrors, CycleNamesItsJobsInOrder) {
  EXPECT_EQ(error(R"({"name": "x", "kind": "object", "sources": ["add.c"]},
                     {"name": "c", "kind": "tar", "inputs": ["@x"], "deps": ["a"]},
                     {"name": "a", "kind": "tar", "inputs": ["@b"]},
                     {"name": "b", "kind": "tar", "inputs": ["add.c"], "deps": ["c"]})"),
            "manifest test.json: job \"c\": key \"deps\": dependency cycle c -> a -> b -> c");
  EXPECT_EQ(error(R"({"name": "a", "kind": "tar", "inputs": ["@b"]},
                     {"name": "b", "kind": "tar", "inputs": ["@a"]})"),
            "manifest test.json: job \"a\": key \"inputs\": dependency cycle a -> b -> a");
}

TEST_F(ManifestErrors, SettingValues) {
  EXPECT_TRUE(
      has(error(R"({"name": "a", "kind": "shared", "sources": ["add.c"], "launcher": "make"})"),
          "job \"a\": key \"launcher\": \"make\" is not a launcher (one of ccache, "
          "sccache, distcc, icecc)"));
  EXPECT_TRUE(
      has(error(R"({"name": "a", "kind": "shared", "sources": ["add.c"], "toolchain": "vs"})"),
          "job \"a\": key \"toolchain\": \"vs\" is not a toolchain (one of host, "
          "ndk, xcode)"));
  EXPECT_TRUE(
      has(error(R"({"name": "k", "kind": "cuda", "sources": ["gemm.cu"], "format": "elf"})"),
          "job \"k\": key \"format\": \"elf\" is not a CUDA format (one of ptx, "
          "cubin, fatbin)"));
  // NVRTC makes no fatbin: said in the manifest's words, before anything runs.
  EXPECT_TRUE(
      has(error(R"({"name": "k", "kind": "cuda", "sources": ["gemm.cu"], "format": "fatbin"})"),
          "job \"k\": NVRTC does not support fatbin generation: use \"format\": \"cubin\" or "
          "\"format\": \"ptx\" with NVRTC, or \"backend\": \"nvcc\" for a fatbin"));
  EXPECT_TRUE(
      has(error(R"({"name": "k", "kind": "cuda", "sources": ["gemm.cu"], "backend": "hip"})"),
          "job \"k\": key \"backend\": \"hip\" is not a CUDA backend (one of "
          "nvrtc, nvcc)"));
  EXPECT_TRUE(
      has(error(R"({"name": "k", "kind": "cuda", "sources": ["gemm.cu"], "arch": "gfx90a"})"),
          "job \"k\": key \"arch\": \"gfx90a\" is not a CUDA arch"));
  EXPECT_TRUE(
      has(error(R"({"name": "r", "kind": "rocm-co", "sources": ["k.cl"], "arch": "sm_80"})"),
          "job \"r\": key \"arch\": \"sm_80\" is not an AMDGPU arch"));
}

TEST_F(ManifestErrors, TheFirstProblemInManifestOrderIsReported) {
  std::string message = error(R"({"name": "a", "kind": "tar", "inputs": ["@missing"]},
                                 {"name": "b", "kind": "dll"})");
  EXPECT_TRUE(has(message, "job \"a\": key \"inputs\": there is no job \"missing\""));
  // A job may take the output of a later one.
  EXPECT_EQ(error(R"({"name": "t", "kind": "tar", "inputs": ["@o"]},
                     {"name": "o", "kind": "object", "sources": ["add.c"]})"),
            "no error");
}

}  // namespace
}  // namespace kiln::build
