// The machine an ELF file was built for, and the machine a target triple means: enough to stop
// a cross link from being fed host objects ("Relocations in generic ELF (EM: 183)").
//
//   std::optional<kiln::ElfMachine> m = kiln::read_elf_machine("add.o");   // e.g. 62 (x86-64)
//   kiln::elf_machine_for_triple("aarch64-unknown-linux-gnu");            // 183 (AArch64)
//   kiln::elf_machine_name(183);                                           // "AArch64"
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// e_machine of the ELF header (EM_X86_64 = 62, EM_AARCH64 = 183, ...).
using ElfMachine = std::uint16_t;

// The e_machine of `path`, or std::nullopt when it is not an ELF file (an archive, a script,
// LLVM bitcode, ...). Throws FileNotFound for a missing file, SystemError when it cannot be read.
std::optional<ElfMachine> read_elf_machine(const std::filesystem::path& path);

// The ELF machine code a target triple's architecture means, or std::nullopt for one kiln does
// not know (so no check is made).
std::optional<ElfMachine> elf_machine_for_triple(std::string_view triple);

// A readable name ("x86-64", "AArch64", ...), or "machine N".
std::string elf_machine_name(ElfMachine machine);

}  // namespace kiln
