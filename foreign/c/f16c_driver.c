/* f16c-driver: runs standalone f16c libraries (f16c compile --emit=lib) through their plain C
 * entry point, for `f16c run --target=aarch64` and f16c's tests. Built by the runtime with the
 * target's C compiler and run natively or under qemu-user (the runtime's `foreign` module).
 *
 * Usage: f16c-driver JOBS
 * JOBS holds one job per line:
 *   LIB ENTRY REPEAT NIN NOUT IN_FILE... OUT_FILE... OUT_BYTES...
 * ENTRY is the library's NAME_run_v, called REPEAT times (instruction counts take the
 * difference of two repeat counts); each IN_FILE holds one argument's raw elements in the C
 * types of the library's header; each result is written raw to its OUT_FILE. For every job
 * one line goes to stdout: "ok", "status N" (the entry point's non-zero status) or
 * "error: MESSAGE". */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t (*run_v)(const void *const *inputs, void *const *outputs);

enum { PATH = 4096 };

static void *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(n > 0 ? (size_t)n : 1);
  if (p && n > 0 && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  return p;
}

static int run_job(const char *lib, const char *entry, int repeat, int nin, int nout, char (*paths)[PATH], long *bytes) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("error: %s\n", dlerror());
    return 1;
  }
  run_v f = (run_v)dlsym(h, entry);
  if (!f) {
    printf("error: %s has no %s\n", lib, entry);
    dlclose(h);
    return 1;
  }
  void **ins = calloc((size_t)nin + 1, sizeof(void *));
  void **outs = calloc((size_t)nout + 1, sizeof(void *));
  int failed = !ins || !outs;
  for (int i = 0; i < nin && !failed; i++) {
    ins[i] = read_all(paths[i]);
    if (!ins[i]) {
      printf("error: cannot read %s\n", paths[i]);
      failed = 1;
    }
  }
  for (int i = 0; i < nout && !failed; i++) {
    outs[i] = malloc(bytes[i] > 0 ? (size_t)bytes[i] : 1);
    if (!outs[i]) {
      printf("error: out of memory\n");
      failed = 1;
    }
  }
  if (!failed) {
    int32_t status = 0;
    for (int r = 0; r < repeat && status == 0; r++) status = f((const void *const *)ins, outs);
    if (status != 0) {
      printf("status %d\n", status);
    } else {
      for (int i = 0; i < nout && !failed; i++) {
        FILE *o = fopen(paths[nin + i], "wb");
        if (!o || fwrite(outs[i], 1, (size_t)bytes[i], o) != (size_t)bytes[i]) {
          printf("error: cannot write %s\n", paths[nin + i]);
          failed = 1;
        }
        if (o) fclose(o);
      }
      if (!failed) printf("ok\n");
    }
  }
  for (int i = 0; ins && i < nin; i++) free(ins[i]);
  for (int i = 0; outs && i < nout; i++) free(outs[i]);
  free(ins);
  free(outs);
  dlclose(h);
  return failed;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s JOBS\n", argv[0]);
    return 2;
  }
  FILE *jobs = fopen(argv[1], "r");
  if (!jobs) {
    fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  static char lib[PATH], entry[256];
  int repeat, nin, nout, bad = 0;
  while (fscanf(jobs, "%4095s %255s %d %d %d", lib, entry, &repeat, &nin, &nout) == 5) {
    if (repeat < 1 || nin < 0 || nout < 0 || nin > 4096 || nout > 4096) {
      fprintf(stderr, "bad job\n");
      return 2;
    }
    char (*paths)[PATH] = calloc((size_t)(nin + nout) + 1, PATH);
    long *bytes = calloc((size_t)nout + 1, sizeof(long));
    if (!paths || !bytes) return 2;
    for (int i = 0; i < nin + nout; i++)
      if (fscanf(jobs, "%4095s", paths[i]) != 1) return 2;
    for (int i = 0; i < nout; i++)
      if (fscanf(jobs, "%ld", &bytes[i]) != 1) return 2;
    bad |= run_job(lib, entry, repeat, nin, nout, paths, bytes);
    fflush(stdout);
    free(paths);
    free(bytes);
  }
  fclose(jobs);
  return bad;
}
