/* Seed inputs for elf_fuzz in another class and byte order: built by fuzz/CMakeLists.txt with
 * clang and lld for 32-bit big-endian PowerPC, without a C library. Built with KILN_SEED_DEP it
 * is the library the other one needs (DT_NEEDED and a version need in big-endian ELF32). */
#ifdef KILN_SEED_DEP
int kiln_seed_dep(int x) { return x + 1; }
#else
int kiln_seed_dep(int x);
int kiln_seed_missing(int x);
__attribute__((weak)) int kiln_seed_weak_ref(void);

int kiln_seed_counter = 3;

int kiln_seed_old(void) { return 1; }
int kiln_seed_new(void) {
  return kiln_seed_dep(kiln_seed_missing(2)) + (kiln_seed_weak_ref ? 1 : 0);
}
__asm__(".symver kiln_seed_old, kiln_seed_versioned@KILN_SEED_1");
__asm__(".symver kiln_seed_new, kiln_seed_versioned@@KILN_SEED_2");
#endif
