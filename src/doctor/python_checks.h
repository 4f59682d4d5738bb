// The findings of the Python side, each from a PythonReport (what a child interpreter saw) and
// the environment: the policy, apart from the process that gathers the facts, so that tests can
// feed it reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/doctor.h"
#include "python_probe.h"

namespace kiln::doctor::detail {

// Which tvm the interpreter imports, from where (PYTHONPATH, site-packages, the current
// directory), and whether the import succeeded, failed or crashed. `report` may lack everything
// past start_error.
Finding python_package_finding(const PythonReport& report);

// $TVM_LIBRARY_PATH / $TVM_HOME: unset, relative, naming nothing, or naming what TVM can use.
// `report` is null when no interpreter ran.
Finding tvm_library_path_finding(const PythonReport* report);
Finding tvm_home_finding(const PythonReport* report);

// "TVM libraries": which TVM libraries the import loaded (or, when it did not complete, would
// load) and from where, copies loaded twice, and libraries TVM skipped without a word; then one
// "TVM <library>" finding per library, judged by check_library in the context it was loaded in.
std::vector<Finding> tvm_libraries_findings(const PythonReport& report);

// A conda environment's LLVM (llvmdev, libLLVM) shadowing the system LLVM: first on PATH, or
// mapped into the process while TVM was built with another major. `report` may be null.
Finding conda_llvm_finding(const PythonReport* report);

// "TVM IR serialization": whether an IRModule pickles and reads back in the interpreter (what
// every MetaSchedule build does), and the fix when apache-tvm and apache-tvm-ffi do not match.
// std::nullopt when the probe never got that far (no tvm, or a failed import).
std::optional<Finding> tvm_serialization_finding(const PythonReport& report);

// How the interpreter is named in findings: "python3 (/usr/bin/python3.11, Python 3.11.7)".
std::string interpreter_text(const PythonReport& report);

}  // namespace kiln::doctor::detail
