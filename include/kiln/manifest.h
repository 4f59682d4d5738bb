// The manifest of `kiln build`: a JSON file listing compile jobs (objects, libraries, LLVM IR,
// CUDA and ROCm kernels, WebAssembly, tar bundles), read, checked and put in dependency order
// before anything runs. docs/manifest.md describes the format.
//
//   kiln::build::Manifest manifest = kiln::build::parse_manifest("examples/kiln.json");
//   for (std::size_t i : manifest.order) {  // every job comes after the jobs it waits for
//     const kiln::build::Job& job = manifest.jobs[i];
//     std::cout << kiln::build::kind_name(job.kind) << ' ' << job.output_name().string() << '\n';
//   }
//
// Error contract: every problem in a manifest is a ManifestError whose message starts with
// "manifest <origin>: ", then names the job (`job "gemm"`, or `job 3` when it has no usable name)
// and the key (`key "sources"`), and says what is wrong; the first problem in manifest order is
// the one reported. Parsing reads the manifest and stats the files it names, nothing else.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/enum_names.h"
#include "kiln/error.h"
#include "kiln/launcher.h"

namespace kiln::build {

enum class JobKind {
  object,            // one source -> <name>.o
  shared,            // sources and inputs -> <name>.so
  executable,        // sources and inputs -> <name>
  static_library,    // inputs -> <name>.a
  llvm_ir,           // one C/C++ source -> <name>.ll
  cuda,              // one CUDA source -> <name>.ptx, .cubin or .fatbin
  rocm_code_object,  // one OpenCL, LLVM IR or AMDGPU assembly source -> <name>.hsaco
  wasm,              // C/C++ sources and inputs -> <name>.wasm
  tar,               // inputs -> <name>.tar
};

// Every kind with its manifest spelling, in the order above (kiln/enum_names.h).
inline constexpr EnumName<JobKind> kJobKindNames[] = {{JobKind::object, "object"},
                                                      {JobKind::shared, "shared"},
                                                      {JobKind::executable, "executable"},
                                                      {JobKind::static_library, "static"},
                                                      {JobKind::llvm_ir, "llvm-ir"},
                                                      {JobKind::cuda, "cuda"},
                                                      {JobKind::rocm_code_object, "rocm-co"},
                                                      {JobKind::wasm, "wasm"},
                                                      {JobKind::tar, "tar"}};
static_assert(in_enum_order(kJobKindNames, JobKind::tar), "a name for every JobKind");

// The kind's manifest spelling (kJobKindNames).
std::string_view kind_name(JobKind kind);
// The kind spelled `name` in a manifest; std::nullopt for anything else.
std::optional<JobKind> kind_from_name(std::string_view name);

// The languages a job's sources may be in.
enum class Language { c, cxx, cuda, llvm_ir, assembly, opencl };
// Every language with its manifest spelling.
inline constexpr EnumName<Language> kLanguageNames[] = {
    {Language::c, "c"},          {Language::cxx, "c++"},
    {Language::cuda, "cuda"},    {Language::llvm_ir, "llvm-ir"},
    {Language::assembly, "asm"}, {Language::opencl, "opencl"}};
static_assert(in_enum_order(kLanguageNames, Language::opencl), "a name for every Language");
std::string_view language_name(Language language);
std::optional<Language> language_from_name(std::string_view name);
// The language of a source file from its extension: .c -> c; .cc .cpp .cxx .c++ .C -> c++;
// .cu -> cuda; .ll -> llvm-ir; .s .S -> asm; .cl -> opencl. std::nullopt for any other.
std::optional<Language> language_of(const std::filesystem::path& source);

// Whose compiler builds object, shared, executable and static jobs: the host's, the Android NDK's
// ($TVM_NDK_CC) or Xcode's (xcrun, on a Mac).
enum class Toolchain { host, ndk, xcode };
inline constexpr EnumName<Toolchain> kToolchainNames[] = {
    {Toolchain::host, "host"}, {Toolchain::ndk, "ndk"}, {Toolchain::xcode, "xcode"}};
static_assert(in_enum_order(kToolchainNames, Toolchain::xcode), "a name for every Toolchain");
std::string_view toolchain_name(Toolchain toolchain);
std::optional<Toolchain> toolchain_from_name(std::string_view name);

// A job's timeout when neither the job nor "defaults" gives one.
inline constexpr double kDefaultTimeoutSeconds = 60;
// The same for a job a launcher may run on another machine (icecc, distcc, sccache with a
// scheduler): the first compile of a toolchain there waits for it to be packaged and unpacked,
// which on a loaded machine takes minutes, not seconds.
inline constexpr double kDefaultDistributedTimeoutSeconds = 300;

// A manifest that cannot be read as JSON, or whose content breaks a rule of docs/manifest.md.
class ManifestError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// One entry of "inputs": exactly one of the two is set.
struct Input {
  std::string job;             // "@name": the output of job `name`
  std::filesystem::path file;  // otherwise: an existing regular file, absolute, lexically normal
};

struct Job {
  std::string name;
  JobKind kind = JobKind::object;
  // Absolute, lexically normal, resolved against the manifest's directory; each was a regular
  // file when the manifest was parsed. Empty when `code` is used or the kind takes no sources.
  std::vector<std::filesystem::path> sources;
  // Inline source; "" when `sources` is used.
  std::string code;
  // "language" when given, else language_of(sources[0]), else implied by the kind (cuda);
  // std::nullopt for jobs that compile nothing (static, tar, link-only).
  std::optional<Language> language;
  std::vector<Input> inputs;
  // The jobs this one waits for: those of its "@name" inputs, then those of "deps", each once.
  std::vector<std::string> deps;
  // The defaults' options (for the kinds that inherit them) followed by the job's own.
  std::vector<std::string> options;
  // Seconds; 0 means no limit. Parsed jobs: the job's, else the defaults', else
  // kDefaultTimeoutSeconds.
  double timeout_seconds = 0;
  // Whether the job or "defaults" gave `timeout_seconds` (else it is kDefaultTimeoutSeconds, and
  // kiln build gives a distributed job kDefaultDistributedTimeoutSeconds instead).
  bool timeout_given = false;
  // The job's value, else the defaults' (for the kinds that inherit it), else "".
  std::string cc;
  std::optional<LauncherKind> launcher;  // std::nullopt: none
  Toolchain toolchain = Toolchain::host;
  // cuda: "sm_90a", "compute_80", ... ("" lets the CUDA module ask the GPU); rocm-co: "gfx90a",
  // ... ("" lets the ROCm module ask the GPU).
  std::string arch;
  // cuda only: the backend (nvrtc unless given) and the format (as kiln::cuda::compile_cuda
  // defaults it, cubin with nvrtc and ptx with nvcc, unless given).
  cuda::Format format = cuda::Format::cubin;
  cuda::Backend backend = cuda::Backend::nvrtc;

  // The file this job produces, "<name>.<extension>" (see JobKind; a cuda job's extension is its
  // format); executables have no extension.
  std::filesystem::path output_name() const;
};

struct Manifest {
  std::filesystem::path file;       // the manifest's path as given; "" for parse_manifest_text
  std::filesystem::path directory;  // absolute; where relative sources and inputs resolve
  std::vector<Job> jobs;            // in the manifest's order
  // Indexes into `jobs`, dependencies first; among jobs that are ready at the same time the
  // earlier one in the manifest comes first (so a manifest without deps keeps its order).
  std::vector<std::size_t> order;

  // The index of the job named `name`; std::nullopt when there is none.
  std::optional<std::size_t> index_of(std::string_view name) const;
};

// Reads and parses the manifest at `file` (its directory resolves relative paths; `file` is the
// origin in messages). FileNotFound when it is missing or cannot be opened, SystemError when it
// cannot be stat-ed, ManifestError when it is not a regular file and for every problem in it.
Manifest parse_manifest(const std::filesystem::path& file);

// Parses manifest text; relative paths resolve against `directory` (made absolute against the
// working directory), messages start with "manifest <origin>: ". Throws ManifestError.
Manifest parse_manifest_text(std::string_view json, const std::filesystem::path& directory,
                             std::string_view origin);

}  // namespace kiln::build
