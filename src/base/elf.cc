#include "kiln/elf.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"

namespace kiln {
namespace {

struct KnownMachine {
  ElfMachine machine;
  std::string_view name;
  // Architecture prefixes of a triple ("aarch64" matches "aarch64-unknown-linux-gnu").
  std::array<std::string_view, 4> arches;
};

constexpr KnownMachine kMachines[] = {
    {EM_X86_64, "x86-64", {"x86_64", "amd64"}},
    {EM_386, "Intel 80386", {"i386", "i486", "i586", "i686"}},
    {EM_AARCH64, "AArch64", {"aarch64", "arm64"}},
    {EM_ARM, "ARM", {"arm", "thumb"}},
    {EM_RISCV, "RISC-V", {"riscv64", "riscv32"}},
    {EM_PPC64, "PowerPC64", {"powerpc64", "ppc64"}},
    {EM_PPC, "PowerPC", {"powerpc", "ppc"}},
    {EM_S390, "IBM S/390", {"s390x", "s390"}},
    {EM_MIPS, "MIPS", {"mips"}},
    {EM_LOONGARCH, "LoongArch", {"loongarch64"}},
    {EM_AMDGPU, "AMDGPU", {"amdgcn"}},
};

}  // namespace

std::optional<ElfMachine> read_elf_machine(const std::filesystem::path& path) {
  int raw = internal::retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (raw == -1) {
    if (errno == ENOENT) throw FileNotFound(fmt::format("'{}' does not exist", path.string()));
    throw SystemError(fmt::format("open '{}'", path.string()), errno);
  }
  internal::UniqueFd fd(raw);
  // e_ident (16 bytes), e_type (2), e_machine (2): the same offsets in ELF32 and ELF64.
  std::array<unsigned char, 20> header{};
  ssize_t n =
      internal::retry_eintr([&] { return ::pread(fd.get(), header.data(), header.size(), 0); });
  if (n == -1) throw SystemError(fmt::format("read '{}'", path.string()), errno);
  if (n < static_cast<ssize_t>(header.size()) || std::memcmp(header.data(), ELFMAG, SELFMAG) != 0) {
    return std::nullopt;
  }
  bool little_endian = header[EI_DATA] == ELFDATA2LSB;
  return little_endian ? static_cast<ElfMachine>(header[18] | (header[19] << 8))
                       : static_cast<ElfMachine>((header[18] << 8) | header[19]);
}

std::optional<ElfMachine> elf_machine_for_triple(std::string_view triple) {
  std::string_view arch = triple.substr(0, triple.find('-'));
  for (const KnownMachine& known : kMachines) {
    for (std::string_view prefix : known.arches) {
      // "armv7a" is ARM, but "arm64" must not be taken for ARM: an exact match wins, and a
      // prefix match only counts when no other entry claims the exact name.
      if (!prefix.empty() && arch == prefix) return known.machine;
    }
  }
  for (const KnownMachine& known : kMachines) {
    for (std::string_view prefix : known.arches) {
      if (!prefix.empty() && arch.starts_with(prefix)) return known.machine;
    }
  }
  return std::nullopt;
}

std::string elf_machine_name(ElfMachine machine) {
  for (const KnownMachine& known : kMachines) {
    if (known.machine == machine) return std::string(known.name);
  }
  return fmt::format("machine {}", machine);
}

}  // namespace kiln
