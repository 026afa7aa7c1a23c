/* hwport CPU plugin — the codegen table (ABI 1.2): the "c99" dialect.
 *
 * A module is C99 source compiled by the system C compiler (HWPORT_CC, else cc, gcc or clang
 * on PATH; none: get_target_info says HWP_ERROR_NOT_SUPPORTED) into a shared object in a
 * fresh temporary folder, dlopen()ed with RTLD_LOCAL; the files are removed once it is loaded
 * and its bytes are kept for serialize. A kernel is
 *     void NAME(int64_t gx, int64_t gy, int64_t gz, void *const *args)
 * called once per group of the grid; a launch is one stream task that spreads the groups over
 * the plugin's thread pool in contiguous chunks (gx fastest). Nothing here aborts or exits:
 * every failure is a status with a message (get_last_error). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hwport/codegen.h"
#include "internal.h"
#include "parallel.h"

extern char **environ;

#define CG_MODULE_MAGIC 0x43474d44u   /* "CGMD" */
#define CG_FUNCTION_MAGIC 0x4347464eu /* "CGFN" */
#define CG_MAX_OPTIONS 64
#define CG_PATH_LEN 4096
#define CG_MAX_GRID 2147483647u /* per dimension (max_grid_size 0) */

typedef void (*cg_kernel_fn)(int64_t gx, int64_t gy, int64_t gz, void *const *args);

struct HWP_CodegenFunction_st {
  uint32_t magic;
  struct HWP_CodegenModule_st *module;
  cg_kernel_fn fn;
  struct HWP_CodegenFunction_st *next;
  char name[]; /* NUL-terminated */
};

struct HWP_CodegenModule_st {
  uint32_t magic;
  int32_t device;
  void *handle;         /* dlopen */
  unsigned char *image; /* the shared object's bytes (serialize) */
  size_t image_size;
  pthread_mutex_t mu; /* guards functions */
  struct HWP_CodegenFunction_st *functions;
};

static const char *const g_dialects[] = {"c99", NULL};
static unsigned long g_file_counter; /* atomic: every loaded file gets a name never used before */

/* ---- the compiler ------------------------------------------------------------------------ */

static int is_executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* `name` (a path, or a program looked up on PATH) as an executable path in `out`. */
static int resolve_program(const char *name, char *out, size_t cap) {
  if (name == NULL || name[0] == '\0') return 0;
  if (strchr(name, '/') != NULL) {
    if (!is_executable(name) || strlen(name) >= cap) return 0;
    snprintf(out, cap, "%s", name);
    return 1;
  }
  const char *path = getenv("PATH");
  if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path != '\0') {
    const char *end = strchr(path, ':');
    size_t len = end != NULL ? (size_t)(end - path) : strlen(path);
    if (len > 0 && len + strlen(name) + 2 <= cap) {
      snprintf(out, cap, "%.*s/%s", (int)len, path, name);
      if (is_executable(out)) return 1;
    }
    path += len;
    if (*path == ':') ++path;
  }
  return 0;
}

/* The C compiler to use: HWPORT_CC when set (and nothing else then), else cc, gcc, clang. */
static int find_compiler(char *out, size_t cap, const char **asked) {
  const char *env = getenv("HWPORT_CC");
  if (env != NULL && env[0] != '\0') {
    *asked = env;
    return resolve_program(env, out, cap);
  }
  static const char *const names[] = {"cc", "gcc", "clang"};
  *asked = "cc, gcc or clang";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (resolve_program(names[i], out, cap)) return 1;
  return 0;
}

/* Up to `max` NUL-terminated words of `options` (space or tab separated) in `buf`. */
static int split_options(const char *options, char *buf, size_t cap, char **words, int max) {
  int n = 0;
  if (options == NULL) return 0;
  size_t len = strlen(options);
  if (len >= cap) return -1;
  memcpy(buf, options, len + 1);
  for (char *p = buf; *p != '\0';) {
    while (*p == ' ' || *p == '\t' || *p == '\n') *p++ = '\0';
    if (*p == '\0') break;
    if (n == max) return -1;
    words[n++] = p;
    while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n') ++p;
  }
  return n;
}

static int write_file(const char *path, const void *data, size_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  const char *p = data;
  while (size > 0) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return 0;
    }
    p += w;
    size -= (size_t)w;
  }
  return close(fd) == 0;
}

/* The whole file in a malloc'ed buffer (*size bytes; NUL-terminated beyond them). */
static unsigned char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 4096, n = 0;
  unsigned char *buf = malloc(cap + 1);
  while (buf != NULL) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    unsigned char *bigger = realloc(buf, 2 * cap + 1);
    if (bigger == NULL) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  int failed = ferror(f);
  fclose(f);
  if (buf == NULL || failed) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *size = n;
  return buf;
}

static void copy_log(char *log, size_t cap, const char *text) {
  if (log == NULL || cap == 0) return;
  size_t n = strlen(text);
  if (n >= cap) n = cap - 1;
  memcpy(log, text, n);
  log[n] = '\0';
}

/* A fresh temporary folder in `dir` (TMPDIR, else /tmp). */
static int make_temp_dir(char *dir, size_t cap) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  if ((size_t)snprintf(dir, cap, "%s/hwport-c99-XXXXXX", tmp) >= cap) return 0;
  return mkdtemp(dir) != NULL;
}

/* A file name in `dir` that this process has never loaded (the dynamic loader reuses a loaded
 * object whose path matches, even after its file was removed). */
static void unique_path(char *out, size_t cap, const char *dir, const char *ext) {
  unsigned long k = __atomic_add_fetch(&g_file_counter, 1, __ATOMIC_RELAXED);
  snprintf(out, cap, "%s/k%ld_%lu%s", dir, (long)getpid(), k, ext);
}

/* Runs argv[0] with stdout and stderr into `log_path`; its exit status, or -1 (errno set) when
 * it could not be started, or 128 + signal when it was killed. */
static int run_program(char *const *argv, const char *log_path) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* ---- modules ----------------------------------------------------------------------------- */

/* Loads the shared object at `path` (which is then removed) as a module owning `image`. */
static HWP_Status load_module(int32_t device, const char *path, unsigned char *image,
                              size_t image_size, const char *fn, HWP_Status load_error,
                              HWP_CodegenModule *out) {
  dlerror();
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *why = dlerror();
    free(image);
    return cpu_error(load_error, "%s: cannot load the compiled module: %s", fn,
                     why != NULL ? why : "dlopen failed");
  }
  struct HWP_CodegenModule_st *m = calloc(1, sizeof *m);
  if (m == NULL) {
    dlclose(handle);
    free(image);
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  }
  m->magic = CG_MODULE_MAGIC;
  m->device = device;
  m->handle = handle;
  m->image = image;
  m->image_size = image_size;
  pthread_mutex_init(&m->mu, NULL);
  *out = m;
  return HWP_OK;
}

static void remove_dir(const char *dir, const char *const *files, int n) {
  for (int i = 0; i < n; ++i) unlink(files[i]);
  rmdir(dir);
}

static HWP_Status check_module(HWP_CodegenModule m, const char *fn) {
  if (m == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: module is NULL", fn);
  if (m->magic != CG_MODULE_MAGIC)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a live c99 module", fn, (void *)m);
  return HWP_OK;
}

static HWP_Status check_dialect(const char *dialect, const char *fn) {
  if (dialect == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: dialect is NULL", fn);
  if (strcmp(dialect, "c99") != 0)
    return cpu_error(HWP_ERROR_NOT_SUPPORTED,
                     "%s: dialect '%.64s' is not supported by the cpu plugin (it accepts: c99)",
                     fn, dialect);
  return HWP_OK;
}

/* ---- the table --------------------------------------------------------------------------- */

static void target_architecture(char *out, size_t cap, uint32_t *lanes) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    snprintf(out, cap, "x86_64-avx512");
    *lanes = 16;
  } else if (__builtin_cpu_supports("avx2")) {
    snprintf(out, cap, "x86_64-avx2");
    *lanes = 8;
  } else {
    snprintf(out, cap, "x86_64-sse2");
    *lanes = 4;
  }
#else
  snprintf(out, cap, "%s", g_cpu.machine[0] != '\0' ? g_cpu.machine : "unknown");
  *lanes = 4; /* 128-bit vectors (NEON, SSE) */
#endif
}

static char g_architecture[64];
static uint32_t g_lanes;

static void target_once(void) { target_architecture(g_architecture, sizeof g_architecture, &g_lanes); }

static HWP_Status cg_get_target_info(int32_t device, HWP_CodegenTargetInfo *info) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  HWP_Status st = cpu_check_device(device, "codegen.get_target_info");
  if (st != HWP_OK) return st;
  if (info == NULL || info->struct_size < sizeof(size_t))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "codegen.get_target_info: info is %s",
                     info == NULL ? "NULL" : "smaller than its struct_size field");
  char cc[CG_PATH_LEN];
  const char *asked = NULL;
  if (!find_compiler(cc, sizeof cc, &asked))
    return cpu_error(HWP_ERROR_NOT_SUPPORTED,
                     "codegen.get_target_info: no C compiler found (looked for %.200s): the "
                     "c99 target needs one (set HWPORT_CC)",
                     asked);
  pthread_once(&once, target_once);
  HWP_CodegenTargetInfo full;
  memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  full.dialects = g_dialects;
  full.architecture = g_architecture;
  full.flags = HWP_CODEGEN_FLOAT64 | HWP_CODEGEN_SERIALIZE;
  full.simd_width = g_lanes;
  full.preferred_vector_width = g_lanes;
  full.max_group_size = 1;
  full.compute_units = (uint32_t)cpu_parallel_threads();
  full.local_memory_bytes = 0;
  full.max_grid_size = 0; /* 2^31 - 1 per dimension */
  hwps_copy_sized(info, &full, sizeof full);
  return HWP_OK;
}

static HWP_Status cg_compile(int32_t device, const char *dialect, const char *source,
                             const char *options, HWP_CodegenModule *out, char *log,
                             size_t log_capacity) {
  const char *fn = "codegen.compile";
  HWP_Status st = cpu_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (source == NULL || out == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                     source == NULL ? "source" : "out");
  st = check_dialect(dialect, fn);
  if (st != HWP_OK) return st;
  char cc[CG_PATH_LEN];
  const char *asked = NULL;
  if (!find_compiler(cc, sizeof cc, &asked))
    return cpu_error(HWP_ERROR_NOT_SUPPORTED, "%s: no C compiler found (looked for %.200s)", fn,
                     asked);
  char opt_buf[4096];
  char *words[CG_MAX_OPTIONS];
  int nwords = split_options(options, opt_buf, sizeof opt_buf, words, CG_MAX_OPTIONS);
  if (nwords < 0)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: options are too long (at most %d words, %zu characters)", fn,
                     CG_MAX_OPTIONS, sizeof opt_buf - 1);

  char dir[CG_PATH_LEN / 2], src_path[CG_PATH_LEN], so_path[CG_PATH_LEN], log_path[CG_PATH_LEN];
  if (!make_temp_dir(dir, sizeof dir))
    return cpu_error(HWP_ERROR_DEVICE, "%s: cannot create a temporary folder: %s", fn,
                     strerror(errno));
  snprintf(src_path, sizeof src_path, "%s/kernel.c", dir);
  snprintf(log_path, sizeof log_path, "%s/compiler.log", dir);
  unique_path(so_path, sizeof so_path, dir, ".so");
  const char *files[] = {src_path, so_path, log_path};
  if (!write_file(src_path, source, strlen(source))) {
    int e = errno;
    remove_dir(dir, files, 3);
    return cpu_error(HWP_ERROR_DEVICE, "%s: cannot write %s: %s", fn, src_path, strerror(e));
  }

  char *argv[16 + CG_MAX_OPTIONS];
  int argc = 0;
  argv[argc++] = cc;
  static const char *const fixed[] = {"-O3",    "-march=native", "-fPIC", "-shared",
                                      "-std=c99", "-ffp-contract=fast"};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; ++i) argv[argc++] = (char *)fixed[i];
  for (int i = 0; i < nwords; ++i) argv[argc++] = words[i];
  argv[argc++] = "-o";
  argv[argc++] = so_path;
  argv[argc++] = src_path;
  argv[argc++] = "-lm";
  argv[argc] = NULL;

  int rc = run_program(argv, log_path);
  if (rc != 0) {
    int e = errno;
    size_t n = 0;
    unsigned char *text = rc > 0 ? read_file(log_path, &n) : NULL;
    copy_log(log, log_capacity, text != NULL ? (const char *)text : "");
    /* the message: the compiler's first line that says "error", else its first line */
    char first[300] = "";
    if (text != NULL) {
      const char *line = strstr((const char *)text, "error");
      if (line == NULL) line = (const char *)text;
      while (line > (const char *)text && line[-1] != '\n') --line;
      size_t len = strcspn(line, "\n");
      snprintf(first, sizeof first, "%.*s", (int)(len < 299 ? len : 299), line);
    }
    free(text);
    remove_dir(dir, files, 3);
    if (rc < 0)
      return cpu_error(HWP_ERROR_DEVICE, "%s: cannot run the C compiler %s: %s", fn, cc,
                       strerror(e));
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: the C compiler %s failed (exit status %d): %s", fn, cc, rc,
                     first[0] != '\0' ? first : "(no output)");
  }
  size_t image_size = 0;
  unsigned char *image = read_file(so_path, &image_size);
  if (image == NULL) {
    remove_dir(dir, files, 3);
    return cpu_error(HWP_ERROR_DEVICE, "%s: cannot read the compiled module %s", fn, so_path);
  }
  st = load_module(device, so_path, image, image_size, fn, HWP_ERROR_INVALID_ARGUMENT, out);
  remove_dir(dir, files, 3);
  return st;
}

static HWP_Status cg_get_function(HWP_CodegenModule module, const char *name,
                                  HWP_CodegenFunction *out) {
  const char *fn = "codegen.get_function";
  HWP_Status st = check_module(module, fn);
  if (st != HWP_OK) return st;
  if (name == NULL || out == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                     name == NULL ? "name" : "out");
  pthread_mutex_lock(&module->mu);
  for (struct HWP_CodegenFunction_st *f = module->functions; f != NULL; f = f->next) {
    if (strcmp(f->name, name) == 0) {
      *out = f;
      pthread_mutex_unlock(&module->mu);
      return HWP_OK;
    }
  }
  dlerror();
  void *sym = dlsym(module->handle, name);
  /* dlsym also finds what the module's dependencies (libc, libm) define: only its own count */
  Dl_info where;
  struct link_map *map = NULL;
  int own = sym != NULL && dladdr(sym, &where) != 0 &&
            dlinfo(module->handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL &&
            where.dli_fname != NULL && map->l_name != NULL &&
            strcmp(where.dli_fname, map->l_name) == 0;
  if (!own) {
    pthread_mutex_unlock(&module->mu);
    return cpu_error(HWP_ERROR_NOT_FOUND, "%s: the module defines no function '%.200s'", fn,
                     name);
  }
  size_t len = strlen(name);
  struct HWP_CodegenFunction_st *f = malloc(sizeof *f + len + 1);
  if (f == NULL) {
    pthread_mutex_unlock(&module->mu);
    return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  }
  f->magic = CG_FUNCTION_MAGIC;
  f->module = module;
  *(void **)(&f->fn) = sym; /* POSIX: a function's address through a data pointer */
  memcpy(f->name, name, len + 1);
  f->next = module->functions;
  module->functions = f;
  *out = f;
  pthread_mutex_unlock(&module->mu);
  return HWP_OK;
}

/* One launch, owned by its stream task. */
typedef struct cg_launch {
  cg_kernel_fn fn;
  int64_t grid[3];
  int64_t total;
  int32_t num_args;
  void **ptrs;        /* args[i] as the kernel sees it */
  union {
    int64_t i64;
    double f64;
  } *scalars;         /* the storage scalar arguments point to */
} cg_launch;

static void launch_chunk(void *ctx, int64_t begin, int64_t end) {
  const cg_launch *l = ctx;
  const int64_t nx = l->grid[0], ny = l->grid[1];
  int64_t x = begin % nx, y = (begin / nx) % ny, z = begin / (nx * ny);
  for (int64_t i = begin; i < end; ++i) {
    l->fn(x, y, z, (void *const *)l->ptrs);
    if (++x == nx) {
      x = 0;
      if (++y == ny) {
        y = 0;
        ++z;
      }
    }
  }
}

static HWP_Status launch_run(void *payload) {
  cg_launch *l = payload;
  int threads = cpu_parallel_threads();
  int64_t grain = (l->total + threads - 1) / (threads > 0 ? threads : 1);
  cpu_parallel_for(l->total, grain, launch_chunk, l);
  return HWP_OK;
}

static void launch_release(void *payload) { free(payload); }

static HWP_Status cg_launch_fn(int32_t device, HWP_CodegenFunction function, HWP_Stream stream,
                               const HWP_CodegenLaunch *launch) {
  const char *fn = "codegen.launch";
  HWP_Status st = cpu_check_device(device, fn);
  if (st != HWP_OK) return st;
  if (function == NULL || function->magic != CG_FUNCTION_MAGIC ||
      function->module->magic != CG_MODULE_MAGIC)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %p is not a function of a live c99 module",
                     fn, (void *)function);
  if (launch == NULL || !HWP_HAS_FIELD(launch, HWP_CodegenLaunch, args))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: launch is %s", fn,
                     launch == NULL ? "NULL" : "smaller than HWP_CodegenLaunch (1.2)");
  if (function->module->device != device)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: '%s' was compiled for device %d, not %d",
                     fn, function->name, (int)function->module->device, (int)device);
  int64_t total = 1;
  for (int d = 0; d < 3; ++d) {
    if (launch->grid[d] == 0 || launch->grid[d] > CG_MAX_GRID)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: grid[%d] = %u is out of range [1, %u]", fn, d,
                       (unsigned)launch->grid[d], CG_MAX_GRID);
    if (launch->group[d] != 1)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                       "%s: group[%d] = %u: the c99 target runs groups of one thread "
                       "(group must be {1, 1, 1})",
                       fn, d, (unsigned)launch->group[d]);
    if (total > INT64_MAX / (int64_t)launch->grid[d])
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: the grid has too many groups", fn);
    total *= (int64_t)launch->grid[d];
  }
  const int32_t n = launch->num_args;
  if (n < 0 || (n > 0 && launch->args == NULL))
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: num_args %d with args %s", fn, (int)n,
                     launch->args == NULL ? "NULL" : "set");
  size_t ptrs_off = sizeof(cg_launch);
  size_t scalars_off = ptrs_off + (size_t)n * sizeof(void *);
  scalars_off = (scalars_off + 7) & ~(size_t)7;
  cg_launch *l = malloc(scalars_off + (size_t)n * 8 + 1);
  if (l == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  l->fn = function->fn;
  for (int d = 0; d < 3; ++d) l->grid[d] = launch->grid[d];
  l->total = total;
  l->num_args = n;
  l->ptrs = (void **)((char *)l + ptrs_off);
  l->scalars = (void *)((char *)l + scalars_off);
  for (int32_t i = 0; i < n; ++i) {
    const HWP_CodegenArg *a = &launch->args[i];
    if (!HWP_HAS_FIELD(a, HWP_CodegenArg, value)) {
      free(l);
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: args[%d].struct_size %zu is too small",
                       fn, (int)i, a->struct_size);
    }
    switch (a->kind) {
    case HWP_CODEGEN_ARG_BUFFER:
      if (a->value.buffer.buffer == NULL) {
        free(l);
        return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: args[%d] is a NULL buffer", fn,
                         (int)i);
      }
      /* a cpu buffer handle is the host address of its data */
      l->ptrs[i] = (char *)a->value.buffer.buffer + a->value.buffer.byte_offset;
      break;
    case HWP_CODEGEN_ARG_INT64:
      l->scalars[i].i64 = a->value.i64;
      l->ptrs[i] = &l->scalars[i].i64;
      break;
    case HWP_CODEGEN_ARG_FLOAT64:
      l->scalars[i].f64 = a->value.f64;
      l->ptrs[i] = &l->scalars[i].f64;
      break;
    default:
      free(l);
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: args[%d] has unknown kind %d", fn,
                       (int)i, (int)a->kind);
    }
  }
  /* the inline decision counts a group as a few thousand elements of work */
  uint64_t work = (uint64_t)total * 4096u;
  /* A profiled launch's span is named after the function, which outlives the task (the host
   * unloads a module only when none of its launches is pending). */
  const uint64_t correlation_id =
      HWP_HAS_FIELD(launch, HWP_CodegenLaunch, correlation_id) ? launch->correlation_id : 0;
  return cpu_submit_callback(device, stream, function->name, correlation_id, launch_run,
                             launch_release, l, work);
}

static HWP_Status cg_unload(HWP_CodegenModule module) {
  HWP_Status st = check_module(module, "codegen.unload");
  if (st != HWP_OK) return st;
  module->magic = 0;
  struct HWP_CodegenFunction_st *f = module->functions;
  while (f != NULL) {
    struct HWP_CodegenFunction_st *next = f->next;
    f->magic = 0;
    free(f);
    f = next;
  }
  if (dlclose(module->handle) != 0)
    cpu_log(HWP_LOG_WARNING, "codegen.unload: dlclose failed: %s", dlerror());
  pthread_mutex_destroy(&module->mu);
  free(module->image);
  free(module);
  return HWP_OK;
}

static HWP_Status cg_serialize(HWP_CodegenModule module, void *data, size_t capacity,
                               size_t *size) {
  const char *fn = "codegen.serialize";
  HWP_Status st = check_module(module, fn);
  if (st != HWP_OK) return st;
  if (size == NULL) return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: size is NULL", fn);
  if (data != NULL) {
    if (capacity < module->image_size)
      return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: capacity %zu < the module's %zu bytes",
                       fn, capacity, module->image_size);
    memcpy(data, module->image, module->image_size);
  }
  *size = module->image_size;
  return HWP_OK;
}

static HWP_Status cg_deserialize(int32_t device, const char *dialect, const void *data,
                                 size_t size, HWP_CodegenModule *out) {
  const char *fn = "codegen.deserialize";
  HWP_Status st = cpu_check_device(device, fn);
  if (st != HWP_OK) return st;
  st = check_dialect(dialect, fn);
  if (st != HWP_OK) return st;
  if (data == NULL || out == NULL)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                     data == NULL ? "data" : "out");
  if (size < 4 || memcmp(data, "\177ELF", 4) != 0)
    return cpu_error(HWP_ERROR_INVALID_ARGUMENT,
                     "%s: the %zu bytes are not a shared object made by serialize", fn, size);
  unsigned char *image = malloc(size);
  if (image == NULL) return cpu_error(HWP_ERROR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  memcpy(image, data, size);
  char dir[CG_PATH_LEN / 2], so_path[CG_PATH_LEN];
  if (!make_temp_dir(dir, sizeof dir)) {
    free(image);
    return cpu_error(HWP_ERROR_DEVICE, "%s: cannot create a temporary folder: %s", fn,
                     strerror(errno));
  }
  unique_path(so_path, sizeof so_path, dir, ".so");
  const char *files[] = {so_path};
  if (!write_file(so_path, data, size)) {
    int e = errno;
    free(image);
    remove_dir(dir, files, 1);
    return cpu_error(HWP_ERROR_DEVICE, "%s: cannot write %s: %s", fn, so_path, strerror(e));
  }
  st = load_module(device, so_path, image, size, fn, HWP_ERROR_INVALID_ARGUMENT, out);
  remove_dir(dir, files, 1);
  return st;
}

const HWP_CodegenTable cpu_codegen_table = {
    .struct_size = sizeof(HWP_CodegenTable),
    .get_target_info = cg_get_target_info,
    .compile = cg_compile,
    .get_function = cg_get_function,
    .launch = cg_launch_fn,
    .unload = cg_unload,
    .serialize = cg_serialize,
    .deserialize = cg_deserialize,
};
