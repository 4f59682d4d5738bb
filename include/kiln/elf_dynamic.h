// The dynamic linking information of an ELF file: what a shared library or executable needs
// (DT_NEEDED, symbol versions), what it provides (defined dynamic symbols, version definitions),
// and where it looks (RPATH/RUNPATH). kiln doctor uses it to check a built library against the
// libraries it would load, without parsing `ldd` or `readelf` output.
//
//   kiln::ElfDynamicInfo info = kiln::read_elf_dynamic("build/libtvm.so");
//   for (const std::string& lib : info.needed) std::cout << "needs " << lib << '\n';
//   for (const kiln::ElfVersionNeed& need : info.version_needs) {
//     // e.g. "libstdc++.so.6" -> {"GLIBCXX_3.4.29", "CXXABI_1.3", ...}
//   }
//
// The reader is written for untrusted input: ELF32 and ELF64 in either byte order, every offset,
// size, count and string index checked against the image, chains of version entries bounded,
// and nothing allocated from a header's counts beyond what the image itself can hold. Anything
// malformed is a kiln::InvalidArgument naming the file and what is wrong. Only the section
// headers are read (.dynamic, .dynsym, .gnu.version*); a file whose section headers were
// stripped (or a debug-information-only file) is reported as such rather than read as empty.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/elf.h"

namespace kiln {

// One dynamic symbol.
struct ElfSymbol {
  std::string name;
  // "" when unversioned; for an undefined symbol the version it needs (from verneed through
  // versym), for a defined one the version it defines (verdef).
  std::string version;
  // STB_WEAK.
  bool weak = false;
  // versym bit 0x8000: a non-default definition ("foo@VER" rather than "foo@@VER").
  bool hidden_version = false;
  // STT_* (STT_FUNC, STT_OBJECT, ...).
  unsigned char type = 0;
};

// One Verneed entry: the versions needed from one library, e.g.
// "libstdc++.so.6" -> {"GLIBCXX_3.4.21", "CXXABI_1.3"}.
struct ElfVersionNeed {
  std::string file;
  std::vector<std::string> versions;
};

struct ElfDynamicInfo {
  // e_machine, EI_CLASS, EI_DATA and e_type of the ELF header.
  ElfMachine machine = 0;
  bool is_64bit = true;
  bool little_endian = true;
  std::uint16_t type = 0;
  // DT_NEEDED, in the order of the dynamic section.
  std::vector<std::string> needed;
  // DT_SONAME, or "".
  std::string soname;
  // DT_RPATH / DT_RUNPATH split at ':' (no $ORIGIN expansion).
  std::vector<std::string> rpath;
  std::vector<std::string> runpath;
  // DT_BIND_NOW, DF_BIND_NOW in DT_FLAGS, or DF_1_NOW in DT_FLAGS_1.
  bool bind_now = false;
  // Dynamic symbols with st_shndx == SHN_UNDEF (not index 0, not unnamed), in symbol table order.
  std::vector<ElfSymbol> undefined;
  // Dynamic symbols this file defines for others: st_shndx != SHN_UNDEF, binding GLOBAL, WEAK or
  // GNU_UNIQUE, visibility DEFAULT or PROTECTED, a non-empty name; in symbol table order.
  std::vector<ElfSymbol> defined;
  // Verdef names, without the VER_FLG_BASE entry (which names the file itself).
  std::vector<std::string> version_definitions;
  // Verneed entries, in file order.
  std::vector<ElfVersionNeed> version_needs;
};

// Parses an in-memory ELF image (ELF32 and ELF64, both byte orders). A valid ELF file without a
// dynamic section (an object file, a static executable) gives empty lists. Throws InvalidArgument
// naming `origin` and what is malformed for anything that is not a well-formed ELF image; never
// reads outside `bytes`. The result owns its strings: `bytes` may go away afterwards.
ElfDynamicInfo parse_elf_dynamic(std::span<const unsigned char> bytes, std::string_view origin);

// Maps `path` read-only and parses it. Throws FileNotFound when it does not exist,
// InvalidArgument when it is not a regular file, not ELF, or malformed, and SystemError when it
// cannot be opened or mapped. The file must not shrink while it is read (as for any mmap).
ElfDynamicInfo read_elf_dynamic(const std::filesystem::path& path);

}  // namespace kiln
