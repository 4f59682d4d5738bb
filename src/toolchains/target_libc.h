// Telling a missing target C library apart from other link failures.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::internal {

// When a linker's `output` says the target's C runtime files are missing (crt1.o, crti.o,
// Scrt1.o, crtn.o or -lc not found), one line saying so, naming the target taken from `argv`
// (a compiler named TRIPLE-gcc, or --target=TRIPLE) and the Debian package that provides its C
// library; otherwise "". The toolchain itself ran, so the fix is the target's libc, not the
// compiler.
std::string missing_target_libc_note(std::string_view output, const std::vector<std::string>& argv);

}  // namespace kiln::internal
