#include "kiln/elf.h"

#include <elf.h>

#include <fstream>

#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

TEST(Elf, HeaderExample) {
  EXPECT_EQ(read_elf_machine(testing::self_exe()), EM_X86_64);
  EXPECT_EQ(elf_machine_for_triple("aarch64-unknown-linux-gnu"), EM_AARCH64);
  EXPECT_EQ(elf_machine_name(EM_AARCH64), "AArch64");
}

TEST(Elf, TriplesOfCommonTargets) {
  EXPECT_EQ(elf_machine_for_triple("x86_64-linux-gnu"), EM_X86_64);
  EXPECT_EQ(elf_machine_for_triple("i686-pc-linux-gnu"), EM_386);
  EXPECT_EQ(elf_machine_for_triple("arm64-apple-darwin"), EM_AARCH64);
  EXPECT_EQ(elf_machine_for_triple("armv7a-linux-androideabi"), EM_ARM);
  EXPECT_EQ(elf_machine_for_triple("arm-linux-gnueabihf"), EM_ARM);
  EXPECT_EQ(elf_machine_for_triple("riscv64-linux-gnu"), EM_RISCV);
  EXPECT_EQ(elf_machine_for_triple("powerpc64le-linux-gnu"), EM_PPC64);
  EXPECT_EQ(elf_machine_for_triple("amdgcn-amd-amdhsa"), EM_AMDGPU);
  EXPECT_FALSE(elf_machine_for_triple("wasm32-unknown-emscripten").has_value());
  EXPECT_EQ(elf_machine_name(9999), "machine 9999");
}

TEST(Elf, NonElfAndMissingFiles) {
  TempDirectory tmp;
  std::ofstream(tmp / "script.sh") << "#!/bin/sh\n";
  std::ofstream(tmp / "short") << "\x7f"
                                  "EL";
  EXPECT_FALSE(read_elf_machine(tmp / "script.sh").has_value());
  EXPECT_FALSE(read_elf_machine(tmp / "short").has_value());
  EXPECT_THROW(read_elf_machine(tmp / "missing.o"), FileNotFound);
}

}  // namespace
}  // namespace kiln
