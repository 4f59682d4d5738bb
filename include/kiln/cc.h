// Host and cross C/C++ toolchains, as tvm.support.cc: shared libraries, executables, objects,
// static libraries, symbol maps, target triples, and cross compilers.
//
//   kiln::cc::create_shared("libadd.so", {"add.c"}, {.options = {"-O2"}});
//   kiln::cc::create_object("add.o", {"add.c"}, {.launcher = kiln::Launcher::ccache()});
//   kiln::cc::create_staticlib("libadd.a", {"add.o", "more_objects.tar"});
//   auto symbols = kiln::cc::get_global_symbol_section_map("libadd.so");  // {"add": "T"}
//
//   kiln::cc::CompileFunction arm = kiln::cc::cross_compiler("aarch64-linux-gnu-gcc", {.options =
//   {"-O2"}}); arm("libadd.so", {"add.o"});   // arm.output_format() == "so";
//   arm.get_target_triple() -> aarch64-...
//
// Commands follow the seed: `cc [-shared -fPIC | -c] -o OUTPUT OPTIONS... OBJECTS...`, run from
// an argument vector (with the launcher's prefix and environment when one is given). The options
// come before the inputs, as in tvm.support 0.27, because some of them apply only to the files
// named after them (`-x c++` compiles the following .c files as C++; `-Wl,--whole-archive` wraps
// the archives after it) and a Python caller's options must mean what they mean under TVM. The
// other side of that order: a linker reads its inputs left to right, so a library given as an
// option (`-lm`) is searched before the objects that need it, and with --as-needed (Debian's and
// Ubuntu's default) it is dropped. Pass such libraries with the inputs (`objects` may hold
// "-lm" or a path to libm.so), which come last. A failing
// compiler throws kiln::ToolFailed("Compilation error:\n<output>\nCommand line: <command>"); a
// missing one kiln::ToolNotFound. When `cwd` is given, inputs and outputs inside it are passed
// relative to it, so that the same compile from two temp directories is the same command line
// (and a ccache hit).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/elf.h"
#include "kiln/launcher.h"
#include "kiln/process.h"
#include "kiln/recipe.h"

namespace kiln::cc {

// The host compiler: $CXX, else $CC, else the first of g++, gcc, clang++, clang, c++, cc on PATH;
// std::nullopt when there is none.
std::optional<std::string> get_cc();

struct Options {
  // After `-o OUTPUT`, before the inputs (see above for why, and where -l libraries go).
  std::vector<std::string> options{};
  // The compiler; empty means get_cc() (and kiln::ToolNotFound when there is none).
  std::string cc{};
  // Working directory of the compiler; empty means kiln's own.
  std::filesystem::path cwd{};
  // ccache, sccache, distcc or icecc in front of the compiler.
  std::optional<Launcher> launcher{};
  // Deadline for the compiler; a compiler past it is killed and reported as a ToolFailed.
  std::optional<std::chrono::milliseconds> timeout{};
};

// `cc -shared -fPIC -o output options... objects...` (`-shared` only when cc is nvcc).
RunResult create_shared(const std::filesystem::path& output,
                        const std::vector<std::filesystem::path>& objects,
                        const Options& options = {});

// As the seed: `cc -o output options... objects...`, except that an output ending in .so or
// .dylib is linked -shared -fPIC and one ending in .obj is compiled with -c. A failure says
// which of these modes was chosen and why.
RunResult create_executable(const std::filesystem::path& output,
                            const std::vector<std::filesystem::path>& objects,
                            const Options& options = {});

// `cc -c -o output options... sources...`: one object file.
RunResult create_object(const std::filesystem::path& output,
                        const std::vector<std::filesystem::path>& sources,
                        const Options& options = {});

struct StaticOptions {
  // The archiver; empty means "ar".
  std::string ar{};
  std::optional<std::chrono::milliseconds> timeout{};
};

// `ar -crs` of the inputs into a temporary lib<name>, then moved to `output`; inputs ending in
// .tar are unpacked first and replaced by their files. Throws ToolFailed("AR error: ...").
RunResult create_staticlib(const std::filesystem::path& output,
                           const std::vector<std::filesystem::path>& inputs,
                           const StaticOptions& options = {});

// The recipes of the four functions above (kiln/recipe.h): each create_X(...) is
// perform(X_recipe(...)). The compiler (or archiver) is resolved here, once; tools lists the
// launcher first when there is one, then the compiler. Throws what the functions throw before
// running anything (ToolNotFound when no compiler is found).
Recipe shared_recipe(const std::filesystem::path& output,
                     const std::vector<std::filesystem::path>& objects,
                     const Options& options = {});
Recipe executable_recipe(const std::filesystem::path& output,
                         const std::vector<std::filesystem::path>& objects,
                         const Options& options = {});
// A linked program, whatever its name (executable_recipe's choice of mode by the output's name is
// the seed's create_executable, for callers that name a file; kiln build's jobs say their kind).
Recipe program_recipe(const std::filesystem::path& output,
                      const std::vector<std::filesystem::path>& objects,
                      const Options& options = {});
Recipe object_recipe(const std::filesystem::path& output,
                     const std::vector<std::filesystem::path>& sources,
                     const Options& options = {});
// `scratch`: an existing directory that outlives perform(), for the temporary lib<name> and the
// .tar inputs, which are unpacked into it now (the archiver's command names their members).
Recipe staticlib_recipe(const std::filesystem::path& output,
                        const std::vector<std::filesystem::path>& inputs,
                        const std::filesystem::path& scratch, const StaticOptions& options = {});

// Global defined symbols of a library or object -> their section letter, from the seed's
// `nm -gU` (spelled `nm -g --defined-only`, which GNU nm and llvm-nm both read so): each
// output line of exactly three fields maps its third to its second. Throws FileNotFound for a
// missing file, SystemError for a directory or an unreadable path ("... Is a directory"),
// InvalidArgument for a device or FIFO, and ToolFailed("Runtime error: ...") when nm fails.
// `nm` empty means "nm".
std::map<std::string, std::string> get_global_symbol_section_map(const std::filesystem::path& path,
                                                                 const std::string& nm = {});

// Returns the target triple of a compiler, or std::nullopt when it cannot tell.
using TripleGetter = std::function<std::optional<std::string>()>;

// A getter that runs `compiler [target options] -dumpmachine` and returns its trimmed output, or
// std::nullopt when that fails. `target_options` are the options that change the target
// (--target=..., -target X, -m32, ...); others may be passed and are ignored.
TripleGetter get_target_by_dump_machine(std::string compiler,
                                        const std::vector<std::string>& target_options = {});

// The ELF machine of the objects `compiler` makes when run with `options` (all of them, in
// order: -m32, --target=..., -march=..., -x c++, ...), learned by compiling an empty C file with
// them (`compiler OPTIONS... -c probe.c -o probe.o`, in `cwd` when given) and reading the
// object's header: what the compiler really does, where `-dumpmachine` may not say (gcc -m32
// -dumpmachine still names x86_64). std::nullopt when that compile fails or makes no ELF object:
// then nobody can tell. Remembered per compiler, options and cwd for the life of the process;
// safe to call from several threads.
std::optional<ElfMachine> probe_elf_machine(const std::string& compiler,
                                            const std::vector<std::string>& options,
                                            const std::filesystem::path& cwd = {});

// The ELF machine a compile function's objects are for, given the options of one call, or
// std::nullopt when it cannot tell.
using MachineProbe =
    std::function<std::optional<ElfMachine>(const std::vector<std::string>& options)>;

// A compile function as export_library takes it: (output, objects, options) -> the compiler's
// RunResult, carrying the library's output format ("so", "a", "tar", ...) and, when known, a
// way to get the target triple and a way to learn the ELF machine it links for.
class CompileFunction {
 public:
  using Fn = std::function<RunResult(const std::filesystem::path& output,
                                     const std::vector<std::filesystem::path>& objects,
                                     const std::vector<std::string>& options)>;

  CompileFunction(Fn fn, std::string output_format, TripleGetter get_target_triple = {},
                  MachineProbe machine_probe = {});

  RunResult operator()(const std::filesystem::path& output,
                       const std::vector<std::filesystem::path>& objects,
                       const std::vector<std::string>& options = {}) const;
  const std::string& output_format() const noexcept { return output_format_; }
  bool has_target_triple() const noexcept { return static_cast<bool>(get_target_triple_); }
  // The target triple, or std::nullopt when unknown.
  std::optional<std::string> get_target_triple() const;
  const TripleGetter& target_triple_getter() const noexcept { return get_target_triple_; }
  // The ELF machine a call with `options` links for; std::nullopt when unknown (always, for a
  // function made without a MachineProbe).
  std::optional<ElfMachine> expected_machine(const std::vector<std::string>& options) const;
  const MachineProbe& machine_probe() const noexcept { return machine_probe_; }

 private:
  Fn fn_;
  std::string output_format_;
  TripleGetter get_target_triple_;
  MachineProbe machine_probe_;
};

// create_shared as a CompileFunction with `base` options: output format "so", target triple from
// `<cc> -dumpmachine`, ELF machine from probe_elf_machine(cc, base options + call options).
CompileFunction shared_compiler(Options base = {});

struct CrossOptions {
  // Put before the options of each call. Never accumulated across calls.
  std::vector<std::string> options{};
  // Empty: the base's format, else "so".
  std::string output_format{};
  // Empty: the base's getter.
  TripleGetter get_target_triple{};
  // Appended to the objects of every call.
  std::vector<std::filesystem::path> add_files{};
  // Before linking, compare the ELF machine of each input with the one the base's compiler makes
  // with this call's options (CompileFunction::expected_machine) and refuse a mismatch
  // (kiln::InvalidArgument naming the object, its machine and the expected one). Skipped when
  // the base cannot tell (a function made without a MachineProbe, or a probe compile that
  // failed): a check that is unsure never refuses what the compiler would link.
  bool check_elf_machine = true;
};

// Specializes `base` with options and extra files, as the seed's cross_compiler.
CompileFunction cross_compiler(const CompileFunction& base, const CrossOptions& cross = {});

// A cross compiler from a compiler name: create_shared with that cc, the target triple from
// `<compiler> [its --target options] -dumpmachine`. `launcher` goes in front of it.
CompileFunction cross_compiler(const std::string& compiler, const CrossOptions& cross = {},
                               std::optional<Launcher> launcher = std::nullopt);

// Refuses inputs built for another ELF machine than `expected` (see
// CrossOptions::check_elf_machine); `target` names what was expected in the message.
void check_elf_machines(const std::vector<std::filesystem::path>& inputs, ElfMachine expected,
                        std::string_view target);
// The same for the machine a target triple means; no check for a triple kiln does not know.
void check_elf_machines(const std::vector<std::filesystem::path>& inputs,
                        const std::string& triple);

}  // namespace kiln::cc
