// Finding the CUDA toolkit and its parts, and what a compute capability supports.
#include <dlfcn.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/text.h"
#include "kiln/toolchain_environment.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

using kiln::internal::is_dir;
using kiln::internal::is_file;
using kiln::internal::read_file;

std::optional<int> to_int(std::string_view digits) {
  int value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t begin = 0;;) {
    size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

// "12.4" or "12.4.131" -> a version; std::nullopt when it is not one.
std::optional<CudaVersion> parse_version(std::string_view text) {
  std::vector<std::string_view> fields = split(text, '.');
  if (fields.size() < 2 || fields.size() > 3) return std::nullopt;
  CudaVersion v;
  int* slots[] = {&v.major, &v.minor, &v.patch};
  for (size_t i = 0; i < fields.size(); ++i) {
    std::optional<int> field = to_int(fields[i]);
    if (!field) return std::nullopt;
    *slots[i] = *field;
  }
  return v;
}

std::string machine() {
  utsname names{};
  if (::uname(&names) != 0) return "x86_64";
  return names.machine;
}

}  // namespace

std::string CudaVersion::to_string() const { return fmt::format("{}.{}.{}", major, minor, patch); }

fs::path find_cuda_path() {
  if (std::optional<std::string> path = cuda_environment().get("CUDA_PATH")) return *path;
  if (std::optional<fs::path> nvcc = which("nvcc")) {
    std::error_code ec;
    fs::path real = fs::canonical(*nvcc, ec);
    if (!ec) return real.parent_path().parent_path();
  }
  if (is_file("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda";
  throw FileNotFound(
      "Cannot find cuda path: CUDA_PATH is not set, nvcc is not on PATH, and "
      "/usr/local/cuda/bin/nvcc does not exist");
}

std::optional<CudaVersion> cuda_version_from_files(const fs::path& cuda) {
  for (const fs::path& file : {cuda / "version.txt", cuda / "lib" / "cuda" / "version.txt"}) {
    if (!is_file(file)) continue;
    std::istringstream words(read_file(file));
    std::string last;
    for (std::string word; words >> word;) last = word;
    if (std::optional<CudaVersion> v = parse_version(last)) return *v;
    throw UnexpectedOutput(
        fmt::format("Cannot read cuda version: {} holds '{}', not a version", file.string(), last));
  }
  if (fs::path file = cuda / "version.json"; is_file(file)) {
    nlohmann::json doc = nlohmann::json::parse(read_file(file), nullptr, false);
    if (doc.is_object() && doc.contains("cuda") && doc["cuda"].is_object() &&
        doc["cuda"].contains("version") && doc["cuda"]["version"].is_string()) {
      if (auto v = parse_version(doc["cuda"]["version"].get<std::string>())) return *v;
    }
    throw UnexpectedOutput(fmt::format(
        "Cannot read cuda version: {} has no \"cuda\": {{\"version\": ...}}", file.string()));
  }
  return std::nullopt;
}

namespace {

// What `nvcc --version` says, or std::nullopt (and why) when it fails or names no version.
// Throws CannotRunTool when nvcc cannot be started.
std::optional<CudaVersion> ask_nvcc(const fs::path& nvcc, std::string* why_not) {
  RunResult result =
      run({.argv = {nvcc.string(), "--version"}, .timeout = std::chrono::seconds(60)});
  if (result.ok()) {
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("release") == std::string::npos) continue;
      std::istringstream fields(line);
      for (std::string field; std::getline(fields, field, ',');) {
        std::string_view word = trimmed(field);
        if (word.size() > 1 && word[0] == 'V') {
          if (auto v = parse_version(word.substr(1))) return *v;
        }
      }
    }
  }
  if (why_not != nullptr) {
    *why_not = fmt::format("`{} --version` gave {}:\n{}", nvcc.string(), result.status_text(),
                           result.output);
  }
  return std::nullopt;
}

}  // namespace

std::optional<CudaVersion> nvcc_version(const fs::path& nvcc, std::string* why_not) {
  try {
    return ask_nvcc(nvcc, why_not);
  } catch (const CannotRunTool& e) {
    if (why_not != nullptr) *why_not = e.what();
    return std::nullopt;
  }
}

CudaVersion get_cuda_version(const fs::path& given) {
  fs::path cuda = given.empty() ? find_cuda_path() : given;
  if (std::optional<CudaVersion> v = cuda_version_from_files(cuda)) return *v;
  fs::path nvcc = cuda / "bin" / "nvcc";
  std::string tried =
      fmt::format("no version.txt, lib/cuda/version.txt or version.json in {}", cuda.string());
  if (!is_file(nvcc)) {
    throw FileNotFound(
        fmt::format("Cannot read cuda version: {}, and no {}", tried, nvcc.string()));
  }
  std::string why;
  std::string context = fmt::format("Cannot read cuda version: {}, and ", tried);
  try {
    if (std::optional<CudaVersion> v = ask_nvcc(nvcc, &why)) return *v;
  } catch (const ToolNotExecutable& e) {
    throw ToolNotExecutable(e.tool(), context + e.what());
  } catch (const ToolNotFound& e) {
    throw ToolNotFound(e.tool(), context + e.what());
  }
  throw UnexpectedOutput(context + why);
}

NvshmemPaths find_nvshmem_paths() {
  std::vector<fs::path> roots;
  auto add_root = [&roots](const fs::path& root) {
    if (!root.empty() && std::find(roots.begin(), roots.end(), root) == roots.end()) {
      roots.push_back(root);
    }
  };
  if (auto home = cuda_environment().get("NVSHMEM_HOME")) add_root(*home);
  try {
    add_root(find_cuda_path());
  } catch (const Error&) {  // NOLINT(bugprone-empty-catch): no toolkit, one root fewer
  }
  add_root("/usr/local");
  add_root("/usr");
  const std::string triple = machine() + "-linux-gnu";
  for (const fs::path& root : roots) {
    std::vector<fs::path> includes = {root / "include"};
    std::error_code ec;
    std::vector<fs::path> versioned;
    for (fs::directory_iterator it(root / "include", ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().filename().string().starts_with("nvshmem_")) versioned.push_back(it->path());
    }
    std::sort(versioned.begin(), versioned.end());
    includes.insert(includes.end(), versioned.begin(), versioned.end());
    const fs::path libs[] = {root / "lib64", root / "lib", root / "lib" / triple,
                             root / "lib64" / triple};
    for (const fs::path& include : includes) {
      if (!is_file(include / "nvshmem.h")) continue;
      for (const fs::path& lib : libs) {
        bool host_so = false;
        for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec)) {
          host_so = host_so || it->path().filename().string().starts_with("libnvshmem_host.so");
        }
        if (is_file(lib / "libnvshmem.a") || is_file(lib / "libnvshmem.so") ||
            is_file(lib / "libnvshmem_device.a") || host_so) {
          return {include, lib};
        }
      }
    }
  }
  std::string message =
      "Error: Could not find NVSHMEM installation.\nSearched in the following locations:\n";
  for (const fs::path& root : roots) message += "  - " + root.string() + "\n";
  message +=
      "\nPlease ensure NVSHMEM is installed and try one of the following:\n"
      "  1. Set the 'NVSHMEM_HOME' environment variable to your NVSHMEM installation directory.\n"
      "  2. Ensure your CUDA Toolkit installation includes NVSHMEM and 'nvcc' is on your PATH.";
  throw FileNotFound(message);
}

fs::path find_libdevice_path(int arch) {
  fs::path cuda = find_cuda_path();
  fs::path dir = cuda / "nvvm" / "libdevice";
  if (!is_dir(dir)) dir = cuda / "lib" / "nvidia-cuda-toolkit" / "libdevice";
  CudaVersion version = get_cuda_version(cuda);
  if (version.major < 11 || (version.major == 11 && version.minor <= 3)) {
    return dir / "libdevice.10.bc";
  }
  int best = 0;
  fs::path chosen;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with("libdevice")) continue;
    // libdevice.compute_N.10.bc, or plain libdevice.10.bc (any arch)
    std::vector<std::string_view> fields = split(name, '.');
    std::string_view arch_field = fields.size() >= 3 ? fields[fields.size() - 3] : "";
    std::optional<int> n = to_int(arch_field.substr(arch_field.rfind('_') + 1));
    if (!n) {
      if (best == 0) chosen = it->path();
    } else if (best < *n && *n <= arch) {
      best = *n;
      chosen = it->path();
    }
  }
  if (chosen.empty()) {
    throw FileNotFound(fmt::format("Cannot find libdevice for arch {} in {}", arch, dir.string()));
  }
  return chosen;
}

std::string callback_libdevice_path(int arch, std::string* warning) {
  try {
    return find_libdevice_path(arch).string();
  } catch (const Error& e) {
    if (warning != nullptr) *warning = fmt::format("Cannot find libdevice path: {}", e.what());
    return {};
  }
}

std::string compute_version_of_arch(std::string_view arch) {
  size_t underscore = arch.find('_');
  std::string_view digits = underscore == std::string_view::npos ? "" : arch.substr(underscore + 1);
  std::string_view prefix = arch.substr(0, underscore);
  bool known_prefix = prefix == "sm" || prefix == "compute" || prefix == "lto";
  std::string_view suffix;
  if (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) {
    suffix = digits.substr(digits.size() - 1);
    digits.remove_suffix(1);
  }
  bool numeric = digits.size() >= 2 && std::all_of(digits.begin(), digits.end(), [](char c) {
                   return std::isdigit(static_cast<unsigned char>(c));
                 });
  if (!known_prefix || !numeric) {
    throw InvalidArgument(fmt::format(
        "The arch is not expected {}: use sm_XY, sm_XYa or compute_XY (e.g. sm_80, sm_90a)", arch));
  }
  std::string version = fmt::format("{}.{}", digits.substr(0, digits.size() - 1), digits.back());
  if (!suffix.empty()) version += fmt::format(".{}", suffix);
  return version;
}

std::string get_target_compute_version(std::string_view arch) {
  if (!arch.empty()) return compute_version_of_arch(arch);
  std::string why;
  if (std::optional<std::string> device = device_compute_version(&why)) {
    if (parse_compute_version(*device).first >= 9) return *device + ".a";
    return *device;
  }
  throw InvalidArgument(fmt::format(
      "No CUDA architecture was specified or GPU detected (tried device 0: {}). Try specifying "
      "it by adding '-arch=sm_xx' to your target (kiln: --arch sm_80, or CompileOptions::arch).",
      why));
}

std::pair<int, int> parse_compute_version(std::string_view compute_version) {
  size_t dot = compute_version.find('.');
  if (dot != std::string_view::npos) {
    size_t end = compute_version.find('.', dot + 1);
    auto major = to_int(compute_version.substr(0, dot));
    auto minor = to_int(compute_version.substr(
        dot + 1, end == std::string_view::npos ? std::string_view::npos : end - dot - 1));
    if (major && minor) return {*major, *minor};
  }
  throw InvalidArgument(
      fmt::format("Compute version parsing error: '{}' is not like \"8.6\"", compute_version));
}

bool have_fp16(std::string_view v) {
  auto [major, minor] = parse_compute_version(v);
  return (major == 5 && minor == 3) || major >= 6;
}
bool have_int8(std::string_view v) { return parse_compute_version(v).first >= 6; }
bool have_tensorcore(std::string_view v) { return parse_compute_version(v).first >= 7; }
bool have_bf16(std::string_view v) { return parse_compute_version(v).first >= 8; }
bool have_fp8(std::string_view v) {
  auto [major, minor] = parse_compute_version(v);
  return (major == 8 && minor == 9) || major >= 9;
}
bool have_fp4(std::string_view v) { return parse_compute_version(v) == std::pair{10, 0}; }
bool have_cudagraph() {
  try {
    return get_cuda_version() >= CudaVersion{10, 0, 0};
  } catch (const Error&) {
    return false;  // no toolkit, or none that says its version: the seed's False
  }
}

std::optional<CudaVersion> driver_cuda_version(std::string* why_not) {
  // The driver stays loaded once found: unloading it is not supported by NVIDIA.
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* error = ::dlerror();
    if (why_not != nullptr) {
      *why_not = fmt::format("no CUDA driver: {}", error != nullptr ? error : "libcuda.so.1");
    }
    return std::nullopt;
  }
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(::dlsym(driver, "cuDriverGetVersion"));
  int version = 0;
  if (get == nullptr || get(&version) != 0 || version <= 0) {
    if (why_not != nullptr) *why_not = "the CUDA driver library did not say its CUDA version";
    return std::nullopt;
  }
  return CudaVersion{version / 1000, (version % 1000) / 10, 0};
}

std::optional<std::string> device_compute_version(std::string* why_not) {
  auto fail = [why_not](std::string why) -> std::optional<std::string> {
    if (why_not != nullptr) *why_not = std::move(why);
    return std::nullopt;
  };
  // The driver stays loaded once found: unloading it is not supported by NVIDIA.
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* error = ::dlerror();
    return fail(fmt::format("no CUDA driver: {}", error != nullptr ? error : "libcuda.so.1"));
  }
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Attribute = int (*)(int*, int, int);
  auto init = reinterpret_cast<Init>(::dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(::dlsym(driver, "cuDeviceGetCount"));
  auto get = reinterpret_cast<Get>(::dlsym(driver, "cuDeviceGet"));
  auto attribute = reinterpret_cast<Attribute>(::dlsym(driver, "cuDeviceGetAttribute"));
  if (init == nullptr || count == nullptr || get == nullptr || attribute == nullptr) {
    return fail("the CUDA driver library lacks cuInit/cuDeviceGet/cuDeviceGetAttribute");
  }
  if (int r = init(0); r != 0) return fail(fmt::format("cuInit failed with CUresult {}", r));
  int devices = 0;
  if (count(&devices) != 0 || devices == 0) return fail("the CUDA driver sees no device");
  int device = 0;
  int major = 0;
  int minor = 0;
  constexpr int kMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  constexpr int kMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
  if (get(&device, 0) != 0 || attribute(&major, kMajor, device) != 0 ||
      attribute(&minor, kMinor, device) != 0) {
    return fail("the CUDA driver could not read device 0's compute capability");
  }
  return fmt::format("{}.{}", major, minor);
}

}  // namespace kiln::cuda
