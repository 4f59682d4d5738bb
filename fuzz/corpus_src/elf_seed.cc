// Seed input for elf_fuzz, built by fuzz/CMakeLists.txt (not committed as a binary): a small C++
// shared library with what the ELF reader parses. DT_NEEDED on libstdc++, libm and libc, a
// SONAME, a RUNPATH and BIND_NOW come from the link options; elf_seed.map defines two versions,
// one of them only as a hidden ("@") compatibility version; std::string and cos() need GLIBCXX_
// and GLIBC_ versions; there are undefined, weak, data and function symbols.
#include <cmath>
#include <string>

extern "C" {
int kiln_seed_missing(int);                          // no library defines it
__attribute__((weak)) int kiln_seed_weak_ref(void);  // may stay undefined

int kiln_seed_counter = 3;

int kiln_seed_old(void) { return 1; }
int kiln_seed_new(void) { return kiln_seed_missing(2) + (kiln_seed_weak_ref ? 1 : 0); }
double kiln_seed_cosine(double x) { return std::cos(x); }
}
__asm__(".symver kiln_seed_old, kiln_seed_versioned@KILN_SEED_1");
__asm__(".symver kiln_seed_new, kiln_seed_versioned@@KILN_SEED_2");

std::string kiln_seed_greet(const std::string& name) { return "hello " + name + '!'; }
