// Test helper for kiln doctor's findings, shared by the doctor's test files.
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "kiln/doctor.h"

namespace kiln::testing {

// The finding of `check`; a test failure, and a FAIL placeholder, when there is none.
inline const doctor::Finding& finding_named(const std::vector<doctor::Finding>& findings,
                                            std::string_view check) {
  for (const doctor::Finding& f : findings) {
    if (f.check == check) return f;
  }
  static const doctor::Finding none{"(none)", doctor::Status::fail, "no such finding", ""};
  ADD_FAILURE() << "no finding " << check;
  return none;
}

}  // namespace kiln::testing
