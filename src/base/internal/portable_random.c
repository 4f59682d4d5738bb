/* A portable build's answer to glibc 2.36's arc4random and arc4random_buf (KILN_PORTABLE,
 * cmake/KilnPortable.cmake). libstdc++.a (std::random_device's "arc4random" token) and libarchive
 * reference them; linked with --wrap, their calls come here instead, so the program and the
 * extension ask nothing newer of glibc than 2.34. Both fill from the kernel's random source, as
 * glibc's arc4random does: getrandom (glibc 2.25), retried on EINTR and short reads, never
 * failing (glibc's aborts when the kernel has none; so does this). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

void __wrap_arc4random_buf(void* buffer, size_t size) {
  unsigned char* out = buffer;
  while (size > 0) {
    ssize_t got = getrandom(out, size, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      abort();
    }
    out += got;
    size -= (size_t)got;
  }
}

uint32_t __wrap_arc4random(void) {
  uint32_t value;
  __wrap_arc4random_buf(&value, sizeof value);
  return value;
}
