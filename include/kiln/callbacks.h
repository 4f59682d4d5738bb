// The seed's global functions by their seed names, so that a host compiler (TVM's C++ side, or
// anything speaking JSON-like values) can look them up and call them:
//
//   kiln::Value cubin = kiln::callbacks::call("tvm_callback_cuda_compile", {source, "sm_80"});
//   bool bf16 = kiln::callbacks::call("tvm.support.nvcc.supports_bf16", {"8.0"}).get<bool>();
//
// Arguments are a JSON array of the positional arguments; byte strings travel as binary values
// (strings are accepted too). Listed by `kiln describe --json` under "callbacks".
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/pool.h"  // kiln::Value

namespace kiln::callbacks {

using Callback = std::function<Value(const Value& args)>;

// Every registered name, sorted.
std::vector<std::string> names();
// Calls `name` with `args` (an array). Throws InvalidArgument for an unknown name or arguments
// of the wrong shape; otherwise whatever the function throws.
Value call(std::string_view name, const Value& args);

}  // namespace kiln::callbacks
