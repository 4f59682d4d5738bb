#include "kiln/cc.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "internal/files.h"
#include "internal/path_list.h"
#include "kiln/elf.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/recipe.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"
#include "kiln/text.h"
#include "kiln/toolchain_environment.h"
#include "steps.h"

namespace kiln::cc {
namespace fs = std::filesystem;
namespace {

enum class Mode { shared, executable, object };

std::string resolve_cc(const Options& options) {
  if (!options.cc.empty()) return options.cc;
  if (std::optional<std::string> cc = get_cc()) return *cc;
  throw ToolNotFound("cc",
                     "no C/C++ compiler found: set CXX or CC, or install one of g++, gcc, "
                     "clang++, clang, c++, cc on PATH");
}

// A path as the compiler, running in `cwd`, should see it. Relative paths are relative to cwd
// (the seed's meaning); an absolute path inside cwd becomes relative, so that the same compile
// in two temp directories is the same command line.
std::string as_argument(const fs::path& path, const fs::path& cwd) {
  if (cwd.empty() || path.is_relative()) return path.string();
  fs::path relative =
      path.lexically_normal().lexically_relative(fs::absolute(cwd).lexically_normal());
  if (relative.empty() || *relative.begin() == "..") return path.string();
  return relative.string();
}

std::vector<std::string> mode_flags(Mode mode, const std::string& cc) {
  bool nvcc = fs::path(cc).filename() == "nvcc";
  switch (mode) {
    case Mode::shared:
      if (nvcc) return {"-shared"};
#ifdef __APPLE__
      return {"-shared", "-fPIC", "-undefined", "dynamic_lookup"};
#else
      return {"-shared", "-fPIC"};
#endif
    case Mode::object:
      return {"-c"};
    case Mode::executable:
      break;
  }
  return {};
}

// The recipe that runs `argv` (the compiler first), behind the launcher when there is one.
Recipe tool_recipe(std::vector<std::string> argv, const std::vector<fs::path>& inputs,
                   const Options& options, std::string note) {
  std::string cc = argv.front();
  Recipe recipe{.inputs = inputs, .key_material = cc_environment().material()};
  const std::optional<Launcher>& launcher = options.launcher;
  if (launcher && !launcher->prefix.empty()) {
    recipe.tools.push_back({.what = launcher->name, .program = launcher->prefix.front()});
  }
  recipe.tools.push_back({.what = "the C/C++ compiler", .program = cc});
  recipe.steps.emplace_back(
      ToolStep{.label = "Compilation error:",
               .run = {.argv = launcher ? launcher->wrap(argv) : argv,
                       .cwd = options.cwd,
                       .env = launcher ? launcher->env : Launcher::Environment{},
                       .timeout = options.timeout},
               .failure_note = std::move(note)});
  return recipe;
}

// The compile's recipe: the compiler resolved once, behind the launcher when there is one.
Recipe compile_recipe(Mode mode, const fs::path& output, const std::vector<fs::path>& inputs,
                      const Options& options, std::string mode_note = {}) {
  std::string cc = resolve_cc(options);
  std::vector<std::string> argv{cc};
  for (std::string& flag : mode_flags(mode, cc)) argv.push_back(std::move(flag));
  argv.push_back("-o");
  argv.push_back(as_argument(output, options.cwd));
  // Options before the inputs, as tvm.support 0.27: an option that applies to the files after it
  // (-x c++) must precede them.
  argv.insert(argv.end(), options.options.begin(), options.options.end());
  for (const fs::path& input : inputs) argv.push_back(as_argument(input, options.cwd));
  return tool_recipe(std::move(argv), inputs, options, std::move(mode_note));
}

bool ends_with(const fs::path& path, std::string_view suffix) {
  return path.string().ends_with(suffix);
}

// Options that change a compiler's target, kept for `-dumpmachine`.
std::vector<std::string> target_options_of(const std::vector<std::string>& options) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& o = options[i];
    if (o.starts_with("--target=") || o == "-m32" || o == "-m64" || o == "-mx32" ||
        o.starts_with("--gcc-toolchain=")) {
      kept.push_back(o);
    } else if ((o == "-target" || o == "--target") && i + 1 < options.size()) {
      kept.push_back(o);
      kept.push_back(options[++i]);
    }
  }
  return kept;
}

// Runs `getter` once, on first use, from whichever thread asks first.
TripleGetter memoize(TripleGetter getter) {
  if (!getter) return getter;
  struct Memo {
    std::once_flag once;
    std::optional<std::string> value;
  };
  auto memo = std::make_shared<Memo>();
  return [memo, getter = std::move(getter)] {
    std::call_once(memo->once, [&] { memo->value = getter(); });
    return memo->value;
  };
}

// What a compiler said of its target in this process, by what was asked (compiler, options, cwd,
// PATH): a compiler's target does not change while kiln runs, and export_library asks on every
// export.
template <typename T>
class ProcessMemo {
 public:
  std::optional<T> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = known_.find(key);
    if (it == known_.end()) return std::nullopt;
    return it->second;
  }
  void remember(const std::string& key, T value) {
    std::lock_guard lock(mutex_);
    known_.emplace(key, std::move(value));
  }

 private:
  std::mutex mutex_;
  std::map<std::string, T> known_;
};

using MachineMemo = ProcessMemo<std::optional<ElfMachine>>;

ProcessMemo<std::optional<std::string>>& triple_memo() {
  static ProcessMemo<std::optional<std::string>> memo;
  return memo;
}

// The parts of a memo key, NUL-separated (no argument holds a NUL).
std::string memo_key(const std::vector<std::string>& parts) {
  std::string key;
  for (const std::string& part : parts) key += part + '\0';
  return key;
}

MachineMemo& machine_memo() {
  static MachineMemo memo;
  return memo;
}

// Compiles an empty C file with `options` and reads the object's ELF machine.
std::optional<ElfMachine> compile_probe(const std::string& compiler,
                                        const std::vector<std::string>& options,
                                        const fs::path& cwd) {
  TempDirectory temp;
  fs::path source = temp / "kiln_machine_probe.c";
  fs::path object = temp / "kiln_machine_probe.o";
  internal::write_file(source, "");
  std::vector<std::string> argv{compiler};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"-c", source.string(), "-o", object.string()});
  try {
    RunResult r = run({.argv = argv, .cwd = cwd, .timeout = std::chrono::seconds(60)});
    if (!r.ok() || !internal::is_file(object)) return std::nullopt;
    return read_elf_machine(object);
  } catch (const Error&) {
    return std::nullopt;  // a compiler that cannot run, or a cwd that is gone: nobody can tell
  }
}

std::optional<std::string> find_on_path(std::string_view name) {
  std::string path = cc_environment().get("PATH").value_or("");
  for (const std::string& dir : internal::split_path_list(path)) {
    fs::path candidate = fs::path(dir) / name;
    if (!dir.empty() && which(candidate.string())) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> get_cc() {
  for (const char* variable : {"CXX", "CC"}) {
    if (std::optional<std::string> value = cc_environment().get(variable)) return value;
  }
  for (std::string_view name : {"g++", "gcc", "clang++", "clang", "c++", "cc"}) {
    if (std::optional<std::string> found = find_on_path(name)) return found;
  }
  return std::nullopt;
}

Recipe shared_recipe(const fs::path& output, const std::vector<fs::path>& objects,
                     const Options& options) {
  return compile_recipe(Mode::shared, output, objects, options);
}

Recipe executable_recipe(const fs::path& output, const std::vector<fs::path>& objects,
                         const Options& options) {
  if (ends_with(output, ".so") || ends_with(output, ".dylib")) {
    return compile_recipe(Mode::shared, output, objects, options,
                          fmt::format("kiln: linked '{}' as a shared library because its name ends "
                                      "in .so or .dylib",
                                      output.string()));
  }
  if (ends_with(output, ".obj")) {
    return compile_recipe(
        Mode::object, output, objects, options,
        fmt::format("kiln: compiled '{}' with -c because its name ends in .obj", output.string()));
  }
  return compile_recipe(
      Mode::executable, output, objects, options,
      fmt::format("kiln: linked '{}' as an executable because its name does not end in .so, "
                  ".dylib or .obj; for a library use create_shared or a .so name",
                  output.string()));
}

Recipe program_recipe(const fs::path& output, const std::vector<fs::path>& objects,
                      const Options& options) {
  return compile_recipe(Mode::executable, output, objects, options);
}

Recipe object_recipe(const fs::path& output, const std::vector<fs::path>& sources,
                     const Options& options) {
  return compile_recipe(Mode::object, output, sources, options);
}

Recipe windows_recipe(const fs::path& output, const std::vector<fs::path>& objects,
                      const Options& options) {
  std::string cc =
      !options.cc.empty() ? options.cc : cc_environment().get("TVM_WIN_CC").value_or("clang");
  std::string target = cc_environment().get("TVM_WIN_TARGET").value_or("x86_64");
  std::vector<std::string> argv{cc, "-O2", "--target=" + target};
  if (ends_with(output, ".so") || ends_with(output, ".dll")) {
    argv.emplace_back("-shared");
  } else if (ends_with(output, ".obj")) {
    argv.emplace_back("-c");
  }
  argv.push_back("-o");
  argv.push_back(as_argument(output, options.cwd));
  // This path of the seed's puts the options after the objects.
  for (const fs::path& object : objects) argv.push_back(as_argument(object, options.cwd));
  argv.insert(argv.end(), options.options.begin(), options.options.end());
  return tool_recipe(std::move(argv), objects, options, {});
}

RunResult windows_compile(const fs::path& output, const std::vector<fs::path>& objects,
                          const Options& options) {
  return perform(windows_recipe(output, objects, options));
}

Recipe staticlib_recipe(const fs::path& output, const std::vector<fs::path>& inputs,
                        const fs::path& scratch, const StaticOptions& options) {
  std::string libname = output.filename().string();
  if (!libname.starts_with("lib")) libname = "lib" + libname;
  fs::path temp_output = scratch / libname;
  std::string ar = options.ar.empty() ? "ar" : options.ar;
  std::vector<std::string> argv{ar, "-crs", temp_output.string()};
  for (const fs::path& object : normalize_file_list_by_unpacking_tars(scratch, inputs)) {
    argv.push_back(object.string());
  }
  Recipe recipe{.tools = {{.what = "the archiver", .program = ar}}, .inputs = inputs};
  recipe.steps.emplace_back(
      ToolStep{.label = "AR error:", .run = {.argv = argv, .timeout = options.timeout}});
  recipe.steps.emplace_back(internal::move_into_place_step(temp_output, output));
  return recipe;
}

RunResult create_shared(const fs::path& output, const std::vector<fs::path>& objects,
                        const Options& options) {
  return perform(shared_recipe(output, objects, options));
}

RunResult create_executable(const fs::path& output, const std::vector<fs::path>& objects,
                            const Options& options) {
  return perform(executable_recipe(output, objects, options));
}

RunResult create_object(const fs::path& output, const std::vector<fs::path>& sources,
                        const Options& options) {
  return perform(object_recipe(output, sources, options));
}

RunResult create_staticlib(const fs::path& output, const std::vector<fs::path>& inputs,
                           const StaticOptions& options) {
  TempDirectory temp;
  return perform(staticlib_recipe(output, inputs, temp.path(), options));
}

std::map<std::string, std::string> get_global_symbol_section_map(const fs::path& path,
                                                                 const std::string& nm) {
  // nm's own complaint about a directory or a device is vague; say what the path is instead.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) throw FileNotFound(fmt::format("{} does not exist", path.string()));
    throw SystemError(fmt::format("read symbols of '{}'", path.string()), errno);
  }
  if (S_ISDIR(st.st_mode)) {
    throw SystemError(fmt::format("read symbols of '{}'", path.string()), EISDIR);
  }
  if (!S_ISREG(st.st_mode)) {
    throw InvalidArgument(
        fmt::format("read symbols of '{}': not a regular file (a library or object file is needed)",
                    path.string()));
  }
  RunResult result =
      // The seed's `nm -gU`: on GNU binutils >= 2.39 -U takes an argument (--unicode), so
      // "defined only" is spelled the long way, which GNU nm and llvm-nm both accept.
      check("Runtime error:",
            {.argv = {nm.empty() ? "nm" : nm, "-g", "--defined-only", path.string()},
             .merge_stderr = false});
  std::map<std::string, std::string> symbols;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) f.push_back(field);
    if (f.size() == 3) symbols[f[2]] = f[1];
  }
  return symbols;
}

namespace {

// `compiler [target options] -dumpmachine`'s answer, trimmed; std::nullopt when it fails.
std::optional<std::string> dump_machine(const std::vector<std::string>& argv) {
  try {
    RunResult r = run({.argv = argv, .merge_stderr = false, .timeout = std::chrono::seconds(60)});
    std::string triple(trimmed(r.output));
    if (!r.ok() || triple.empty()) return std::nullopt;
    return triple;
  } catch (const CannotRunTool&) {
    return std::nullopt;  // "cannot tell" is this getter's answer for a missing compiler
  }
}

}  // namespace

TripleGetter get_target_by_dump_machine(std::string compiler,
                                        const std::vector<std::string>& target_options) {
  std::vector<std::string> argv{std::move(compiler)};
  for (std::string& o : target_options_of(target_options)) argv.push_back(std::move(o));
  argv.push_back("-dumpmachine");
  return [argv = std::move(argv)]() -> std::optional<std::string> {
    std::vector<std::string> parts = argv;
    parts.push_back(cc_environment().get("PATH").value_or(""));
    std::string key = memo_key(parts);
    if (std::optional<std::optional<std::string>> known = triple_memo().find(key)) return *known;
    std::optional<std::string> triple = dump_machine(argv);
    triple_memo().remember(key, triple);
    return triple;
  };
}

std::optional<ElfMachine> probe_elf_machine(const std::string& compiler,
                                            const std::vector<std::string>& options,
                                            const fs::path& cwd) {
  std::vector<std::string> parts{compiler, cwd.string()};
  parts.insert(parts.end(), options.begin(), options.end());
  std::string key = memo_key(parts);
  if (std::optional<std::optional<ElfMachine>> known = machine_memo().find(key)) return *known;
  std::optional<ElfMachine> machine = compile_probe(compiler, options, cwd);
  machine_memo().remember(key, machine);
  return machine;
}

CompileFunction::CompileFunction(Fn fn, std::string output_format, TripleGetter get_target_triple,
                                 MachineProbe machine_probe)
    : fn_(std::move(fn)),
      output_format_(std::move(output_format)),
      get_target_triple_(std::move(get_target_triple)),
      machine_probe_(std::move(machine_probe)) {}

std::optional<ElfMachine> CompileFunction::expected_machine(
    const std::vector<std::string>& options) const {
  if (!machine_probe_) return std::nullopt;
  return machine_probe_(options);
}

RunResult CompileFunction::operator()(const fs::path& output, const std::vector<fs::path>& objects,
                                      const std::vector<std::string>& options) const {
  return fn_(output, objects, options);
}

std::optional<std::string> CompileFunction::get_target_triple() const {
  if (!get_target_triple_) return std::nullopt;
  return get_target_triple_();
}

CompileFunction shared_compiler(Options base) {
  std::string cc = !base.cc.empty() ? base.cc : get_cc().value_or("");
  TripleGetter getter =
      cc.empty() ? TripleGetter{} : memoize(get_target_by_dump_machine(cc, base.options));
  MachineProbe probe;
  if (!cc.empty()) {
    probe = [cc, options = base.options, cwd = base.cwd](const std::vector<std::string>& more) {
      std::vector<std::string> all = options;
      all.insert(all.end(), more.begin(), more.end());
      return probe_elf_machine(cc, all, cwd);
    };
  }
  return CompileFunction(
      [base = std::move(base)](const fs::path& output, const std::vector<fs::path>& objects,
                               const std::vector<std::string>& options) {
        Options call = base;
        call.options.insert(call.options.end(), options.begin(), options.end());
        return create_shared(output, objects, call);
      },
      "so", std::move(getter), std::move(probe));
}

CompileFunction cross_compiler(const CompileFunction& base, const CrossOptions& cross) {
  std::string format = !cross.output_format.empty()    ? cross.output_format
                       : !base.output_format().empty() ? base.output_format()
                                                       : "so";
  TripleGetter getter =
      cross.get_target_triple ? memoize(cross.get_target_triple) : base.target_triple_getter();
  // Fresh vectors on every call: the seed's `all_options = base_options; all_options += options`
  // grew base_options each time.
  auto with_base_options = [prefix = cross.options](const std::vector<std::string>& options) {
    std::vector<std::string> all = prefix;
    all.insert(all.end(), options.begin(), options.end());
    return all;
  };
  MachineProbe probe;
  if (base.machine_probe()) {
    probe = [base, with_base_options](const std::vector<std::string>& options) {
      return base.expected_machine(with_base_options(options));
    };
  }
  return CompileFunction(
      [base, cross, with_base_options](const fs::path& output, const std::vector<fs::path>& objects,
                                       const std::vector<std::string>& options) {
        std::vector<fs::path> all_objects = objects;
        all_objects.insert(all_objects.end(), cross.add_files.begin(), cross.add_files.end());
        std::vector<std::string> all_options = with_base_options(options);
        if (cross.check_elf_machine) {
          // The machine the compiler makes with these very options (gcc -m32 -dumpmachine still
          // says x86_64); when it cannot be told, nothing is refused.
          if (std::optional<ElfMachine> expected = base.expected_machine(all_options)) {
            check_elf_machines(all_objects, *expected, "the compiler with these options");
          }
        }
        return base(output, all_objects, all_options);
      },
      format, getter, std::move(probe));
}

CompileFunction cross_compiler(const std::string& compiler, const CrossOptions& cross,
                               std::optional<Launcher> launcher) {
  CrossOptions with_getter = cross;
  if (!with_getter.get_target_triple) {
    with_getter.get_target_triple = get_target_by_dump_machine(compiler, cross.options);
  }
  return cross_compiler(shared_compiler({.cc = compiler, .launcher = std::move(launcher)}),
                        with_getter);
}

void check_elf_machines(const std::vector<fs::path>& inputs, ElfMachine expected,
                        std::string_view target) {
  for (const fs::path& input : inputs) {
    std::error_code ec;
    if (!fs::is_regular_file(input, ec)) continue;  // the compiler reports a missing input
    std::optional<ElfMachine> machine = read_elf_machine(input);
    if (machine && *machine != expected) {
      throw InvalidArgument(fmt::format(
          "'{}' is built for {} (ELF machine {}), but {} builds for {} (ELF machine {}); rebuild "
          "it with the cross compiler",
          input.string(), elf_machine_name(*machine), *machine, target, elf_machine_name(expected),
          expected));
    }
  }
}

void check_elf_machines(const std::vector<fs::path>& inputs, const std::string& triple) {
  if (std::optional<ElfMachine> expected = elf_machine_for_triple(triple)) {
    check_elf_machines(inputs, *expected, fmt::format("the compiler (target {})", triple));
  }
}

}  // namespace kiln::cc
