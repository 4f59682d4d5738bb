#include "kiln/callbacks.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/rocm.h"

namespace kiln::callbacks {
namespace {

// Argument `i` of `args` as T; InvalidArgument naming the callback when it is missing or not one.
template <typename T>
T arg(std::string_view name, const Value& args, size_t i) {
  if (!args.is_array() || i >= args.size()) {
    throw InvalidArgument(fmt::format("{}: argument {} is missing", name, i + 1));
  }
  try {
    return args[i].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InvalidArgument(fmt::format("{}: argument {} is {}, not the expected type", name, i + 1,
                                      args[i].type_name()));
  }
}

// Bytes from a binary value or a string.
std::string bytes_arg(std::string_view name, const Value& args, size_t i) {
  if (args.is_array() && i < args.size() && args[i].is_binary()) {
    const auto& bytes = args[i].get_binary();
    return {bytes.begin(), bytes.end()};
  }
  return arg<std::string>(name, args, i);
}

std::string optional_string(const Value& args, size_t i) {
  return args.is_array() && i < args.size() && args[i].is_string() ? args[i].get<std::string>()
                                                                   : std::string();
}

Value binary(const std::string& bytes) {
  return Value::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
}

const std::map<std::string, Callback, std::less<>>& registry() {
  static const std::map<std::string, Callback, std::less<>> callbacks = {
      {"tvm_callback_cuda_compile",
       [](const Value& a) {
         return binary(cuda::tvm_callback_cuda_compile(bytes_arg("tvm_callback_cuda_compile", a, 0),
                                                       optional_string(a, 1)));
       }},
      {"tvm_callback_libdevice_path",
       [](const Value& a) {
         return Value(
             cuda::find_libdevice_path(arg<int>("tvm_callback_libdevice_path", a, 0)).string());
       }},
      {"tvm.support.nvcc.get_compute_version",
       [](const Value& a) {
         return Value(cuda::get_target_compute_version(optional_string(a, 0)));
       }},
      {"tvm.support.nvcc.supports_bf16",
       [](const Value& a) {
         return Value(cuda::have_bf16(arg<std::string>("tvm.support.nvcc.supports_bf16", a, 0)));
       }},
      {"tvm.support.nvcc.supports_fp8",
       [](const Value& a) {
         return Value(cuda::have_fp8(arg<std::string>("tvm.support.nvcc.supports_fp8", a, 0)));
       }},
      {"tvm.support.nvcc.supports_fp4",
       [](const Value& a) {
         return Value(cuda::have_fp4(arg<std::string>("tvm.support.nvcc.supports_fp4", a, 0)));
       }},
      {"tvm_callback_rocm_link",
       [](const Value& a) {
         return binary(rocm::callback_rocm_link(bytes_arg("tvm_callback_rocm_link", a, 0)));
       }},
      {"tvm_callback_rocm_bitcode_path",
       [](const Value& a) {
         Value paths = Value::array();
         for (const auto& p : rocm::callback_rocm_bitcode_path(optional_string(a, 0))) {
           paths.push_back(p.string());
         }
         return paths;
       }},
      {"tvm_callback_rocm_get_arch",
       [](const Value& a) { return Value(rocm::get_rocm_arch(optional_string(a, 0)).arch); }},
  };
  return callbacks;
}

}  // namespace

std::vector<std::string> names() {
  std::vector<std::string> all;
  for (const auto& [name, fn] : registry()) all.push_back(name);
  return all;
}

Value call(std::string_view name, const Value& args) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    throw InvalidArgument(
        fmt::format("no callback named '{}'; kiln has: {}", name, fmt::join(names(), ", ")));
  }
  if (!args.is_array() && !args.is_null()) {
    throw InvalidArgument(fmt::format("{}: arguments must be an array", name));
  }
  return it->second(args.is_null() ? Value::array() : args);
}

}  // namespace kiln::callbacks
