#include "nvrtc_worker.h"

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::build::detail {
namespace {

// Arguments: {code, format, arch, options, source_path}; result: {bytes, log}. A compile that
// fails throws its ToolFailed, which the pool carries back field for field.
Value compile_cuda_task(Value args) {
  cuda::CompileOptions options;
  options.format = cuda::format_from_name(args["format"].get<std::string>());
  options.arch = args["arch"].get<std::string>();
  options.options = args["options"].get<std::vector<std::string>>();
  options.backend = cuda::Backend::nvrtc;
  options.source_path = args["source_path"].get<std::string>();
  options.use_cache = false;  // kiln build caches the job's output itself
  cuda::CompileResult result = cuda::compile(args["code"].get<std::string>(), options);
  return {
      {"bytes", Value::binary(std::vector<std::uint8_t>(result.bytes.begin(), result.bytes.end()))},
      {"log", std::move(result.log)}};
}
KILN_TASK(kiln_build_cuda, compile_cuda_task);

// That kiln cannot be started is a failure of kiln, never a missing toolchain: a CannotRunTool
// would read as one.
Value call(pool::Worker& worker, const Value& args) {
  try {
    return worker.call("kiln_build_cuda", args);
  } catch (const CannotRunTool& e) {
    throw Error(
        fmt::format("kiln could not start its NVRTC worker (itself, re-executed): {}", e.what()));
  }
}

}  // namespace

cuda::NvrtcCall nvrtc_in_worker(pool::Worker& worker) {
  return [&worker](std::string_view code, const cuda::CompileOptions& o) {
    Value result = call(worker, {{"code", std::string(code)},
                                 {"format", cuda::format_name(*o.format)},
                                 {"arch", o.arch},
                                 {"options", o.options},
                                 {"source_path", o.source_path.string()}});
    const auto& binary = result["bytes"].get_binary();
    return cuda::CompileResult{
        .bytes = std::string(reinterpret_cast<const char*>(binary.data()), binary.size()),
        .log = result["log"].get<std::string>()};
  };
}

}  // namespace kiln::build::detail
