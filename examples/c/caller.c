/* Calls a model compiled by f16c into a standalone library, without f16c's runtime:
 *
 *   f16c compile mlp_small.tosa.mlir --target=aarch64 --precision=fp16 --emit=lib -o libmlp.so
 *   f16c compile mlp_small.tosa.mlir --target=aarch64 --precision=fp16 --emit=header -o forward.h
 *   aarch64-linux-gnu-gcc -I. caller.c -L. -lmlp -lm -o caller
 *   ./caller mlp_small.input.npy y.bin        (on x86: qemu-aarch64 -L /usr/aarch64-linux-gnu ./caller ...)
 *
 * (--target=x86_64 --backend=llvm and the host's cc for x86-64.) The model's function is
 * 'forward' (torch-mlir's name), so the header declares forward_run; its one argument and
 * result are f32 (fp16 inside). The input is a little-endian f32 .npy file; the result is
 * written as raw f32. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "forward.h"

/* Reads the f32 elements of a version 1 .npy file. */
static int read_npy(const char *path, float *x, size_t n) {
  FILE *f = fopen(path, "rb");
  unsigned char head[10];
  if (!f || fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY\x01", 7) != 0) return -1;
  long header = head[8] | (head[9] << 8);
  if (fseek(f, header, SEEK_CUR) != 0 || fread(x, sizeof(float), n, f) != n) return -1;
  fclose(f);
  return 0;
}

int main(int argc, char **argv) {
  static float x[FORWARD_INPUT0_ELEMENTS], y[FORWARD_OUTPUT0_ELEMENTS];
  if (argc != 3 || read_npy(argv[1], x, FORWARD_INPUT0_ELEMENTS) != 0) {
    fprintf(stderr, "usage: %s INPUT.npy OUTPUT.bin (INPUT: %d f32 values)\n", argv[0], FORWARD_INPUT0_ELEMENTS);
    return 2;
  }
  int32_t status = forward_run(x, y);
  if (status != 0) {
    fprintf(stderr, "forward_run failed with status %d\n", status);
    return 1;
  }
  FILE *out = fopen(argv[2], "wb");
  if (!out || fwrite(y, sizeof(float), FORWARD_OUTPUT0_ELEMENTS, out) != FORWARD_OUTPUT0_ELEMENTS) return 1;
  fclose(out);
  printf("y[0] = %g\n", y[0]);
  return 0;
}
