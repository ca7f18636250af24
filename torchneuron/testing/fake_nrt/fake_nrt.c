/* A contract fake of libnrt: the entry points torchneuron declares in nrt_abi.h, over host memory, enforcing
 * the documented preconditions so that a program which passes on the fake has used libnrt as documented:
 *
 *   - nothing works before nrt_init or after nrt_close (NRT_UNINITIALIZED / NRT_CLOSED);
 *   - every handle is checked (tensors, slices, tensor sets, models; freed ones are refused), every offset
 *     and size is checked against the tensor, device copies stay on one NeuronCore;
 *   - device memory is capped per logical core (chip HBM / cores): beyond it, NRT_RESOURCE;
 *   - device memory is not host memory: a tensor's bytes live behind its handle, and the virtual address
 *     nrt_tensor_get_va reports lies in a reserved range with no access rights, so a host dereference of it
 *     faults instead of silently working;
 *   - NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES / NEURON_LOGICAL_NC_CONFIG select and fuse cores as AWS
 *     documents, and cores are reserved across processes (lock files): a second process asking for a core
 *     another holds fails in nrt_init with NRT_EXEC_NC_BUSY ("NeuronCore(s) not available");
 *   - a NEFF is checked at nrt_load (format version, target, LNC) and executed by nrt_execute through the
 *     fake's Python executor (torchneuron.testing.fake_nrt.executor: the NEFF's StableHLO on XLA:CPU);
 *   - NEURON_RT_NUMERICAL_ERRORS_VERBOSITY=critical|debug|verbose makes an execution that wrote NaN (verbose:
 *     or Inf) return NRT_EXEC_COMPLETED_WITH_NUM_ERR, after writing its outputs.
 *
 * The instance it models is fixed when it is built (python -m torchneuron.testing.fake_nrt DIR): -D options
 * below. Tests can make the next calls of an entry point fail with fake_nrt_inject(). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nrt_abi.h"

#ifndef FAKE_NRT_FAMILY
#define FAKE_NRT_FAMILY NRT_INSTANCE_TRN2
#endif
#ifndef FAKE_NRT_SIZE
#define FAKE_NRT_SIZE NRT_INSTANCE_SIZE_3XL
#endif
#ifndef FAKE_NRT_TARGET
#define FAKE_NRT_TARGET "trn2"
#endif
#ifndef FAKE_NRT_PHYSICAL_CORES
#define FAKE_NRT_PHYSICAL_CORES 8
#endif
#ifndef FAKE_NRT_DEFAULT_LNC
#define FAKE_NRT_DEFAULT_LNC 2
#endif
#ifndef FAKE_NRT_HBM_BYTES
#define FAKE_NRT_HBM_BYTES (96ull << 30)
#endif
#ifndef FAKE_NRT_VERSION_MAJOR
#define FAKE_NRT_VERSION_MAJOR 2
#endif
#ifndef FAKE_NRT_VERSION_MINOR
#define FAKE_NRT_VERSION_MINOR 99
#endif
#ifndef FAKE_NRT_STATE_DIR
#define FAKE_NRT_STATE_DIR "/tmp"
#endif
#define FAKE_NEFF_MAGIC "FAKE-NEFF "
#define FAKE_NEFF_VERSION 1
#define MAX_CORES 64
#define PAGE 4096

/* ------------------------------------------------------------------------------------------------ state */
enum { UNINITIALIZED, RUNNING, CLOSED };
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_state = UNINITIALIZED;
static int g_lnc;
static int g_visible;              /* logical cores this process holds: local vnc i is global g_cores[i] */
static int g_cores[MAX_CORES];
static int g_lock_fds[MAX_CORES];
static size_t g_limit;             /* bytes per logical core */
static size_t g_used[MAX_CORES];
static char* g_va[MAX_CORES];      /* the reserved, inaccessible virtual range of each local core */
static int g_verbosity;            /* 0 none, 1 critical (NaN), 2 debug, 3 verbose (NaN and Inf) */

static void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fake libnrt: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Entry points refuse to run outside nrt_init .. nrt_close. */
static NRT_STATUS running(const char* fn) {
  if (g_state == RUNNING) return NRT_SUCCESS;
  say("%s called %s", fn, g_state == CLOSED ? "after nrt_close" : "before nrt_init");
  return g_state == CLOSED ? NRT_CLOSED : NRT_UNINITIALIZED;
}

/* ---------------------------------------------------------------------------------------- fault injection */
#define MAX_INJECT 16
static struct { char fn[64]; int status; int count; } g_inject[MAX_INJECT];

/* The next `count` calls of entry point `fn` return `status` (nrt_execute still runs first). For tests. */
int fake_nrt_inject(const char* fn, int status, int count) {
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < MAX_INJECT; ++i) {
    if (g_inject[i].count == 0 || strcmp(g_inject[i].fn, fn) == 0) {
      snprintf(g_inject[i].fn, sizeof g_inject[i].fn, "%s", fn);
      g_inject[i].status = status;
      g_inject[i].count = count;
      pthread_mutex_unlock(&g_lock);
      return 0;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return -1;
}

static int injected(const char* fn) {
  for (int i = 0; i < MAX_INJECT; ++i) {
    if (g_inject[i].count > 0 && strcmp(g_inject[i].fn, fn) == 0) {
      g_inject[i].count -= 1;
      say("%s: injected status %d", fn, g_inject[i].status);
      return g_inject[i].status;
    }
  }
  return NRT_SUCCESS;
}

/* ------------------------------------------------------------------------------------------- handles */
typedef struct live {
  void* handle;
  struct live* next;
} live_t;
static live_t* g_live = NULL;

static void track(void* h) {
  live_t* l = malloc(sizeof *l);
  l->handle = h;
  l->next = g_live;
  g_live = l;
}

static int tracked(const void* h) {
  for (live_t* l = g_live; l; l = l->next)
    if (l->handle == h) return 1;
  return 0;
}

static void untrack(const void* h) {
  for (live_t** p = &g_live; *p; p = &(*p)->next) {
    if ((*p)->handle == h) {
      live_t* dead = *p;
      *p = dead->next;
      free(dead);
      return;
    }
  }
}

/* ------------------------------------------------------------------------------------ device memory */
typedef struct allocation {
  int vnc;           /* local core */
  size_t size;       /* bytes asked for */
  size_t span;       /* bytes of virtual range (page multiple) */
  uintptr_t va;
  char* bytes;       /* the "HBM": host memory only this library touches */
  int freed;         /* the owning tensor was freed; slices of it are dangling */
  int refs;          /* owning tensor + live slices */
} allocation_t;

struct nrt_tensor {
  allocation_t* alloc;
  size_t offset;     /* into the allocation */
  size_t size;
  int is_slice;
  char name[64];
};

/* First-fit free list of each core's virtual range. */
typedef struct extent {
  uintptr_t start;
  size_t len;
  struct extent* next;
} extent_t;
static extent_t* g_free_va[MAX_CORES];

static uintptr_t take_va(int vnc, size_t span) {
  for (extent_t** p = &g_free_va[vnc]; *p; p = &(*p)->next) {
    extent_t* e = *p;
    if (e->len >= span) {
      uintptr_t va = e->start;
      e->start += span;
      e->len -= span;
      if (e->len == 0) {
        *p = e->next;
        free(e);
      }
      return va;
    }
  }
  return 0;
}

static void give_va(int vnc, uintptr_t start, size_t len) {
  extent_t** p = &g_free_va[vnc];
  while (*p && (*p)->start < start) p = &(*p)->next;
  extent_t* e = malloc(sizeof *e);
  e->start = start;
  e->len = len;
  e->next = *p;
  *p = e;
  /* coalesce with the next, then let the previous absorb this one */
  if (e->next && e->start + e->len == e->next->start) {
    extent_t* n = e->next;
    e->len += n->len;
    e->next = n->next;
    free(n);
  }
  for (extent_t* q = g_free_va[vnc]; q && q != e; q = q->next) {
    if (q->next == e && q->start + q->len == e->start) {
      q->len += e->len;
      q->next = e->next;
      free(e);
      break;
    }
  }
}

static void release(allocation_t* a) {
  if (--a->refs > 0) return;
  free(a->bytes);
  free(a);
}

/* A tensor handle that is alive and whose memory still exists, or NULL (with the reason on stderr). */
static struct nrt_tensor* live_tensor(const nrt_tensor_t* t, const char* fn) {
  if (t == NULL || !tracked(t)) {
    say("%s: %p is not a live tensor handle (never allocated, or already freed)", fn, (const void*)t);
    return NULL;
  }
  struct nrt_tensor* tt = (struct nrt_tensor*)t;
  if (tt->alloc->freed) {
    say("%s: tensor '%s' is a slice of a tensor that was freed", fn, tt->name);
    return NULL;
  }
  return tt;
}

static NRT_STATUS in_bounds(const struct nrt_tensor* t, size_t offset, size_t size, const char* fn) {
  if (offset > t->size || size > t->size - offset) {
    say("%s: %zu bytes at offset %zu run past the end of the %zu-byte tensor '%s'", fn, size, offset, t->size,
        t->name);
    return NRT_INVALID;
  }
  return NRT_SUCCESS;
}

/* ------------------------------------------------------------------------------------- core selection */
static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  if (v == NULL || *v == '\0') return fallback;
  char* end = NULL;
  long n = strtol(v, &end, 10);
  return (end && *end == '\0') ? (int)n : -1;
}

static int lnc_config(void) {
  int lnc = env_int("NEURON_LOGICAL_NC_CONFIG", FAKE_NRT_DEFAULT_LNC);
  if (lnc != 1 && lnc != 2) return -1;
  if (lnc > 1 && FAKE_NRT_DEFAULT_LNC == 1) return -1; /* trn1 cores cannot be fused */
  return lnc;
}

/* NEURON_RT_VISIBLE_CORES: one index or an inclusive range of logical cores. Returns the count, or -1. */
static int parse_visible(const char* spec, int total, int* first) {
  char* end = NULL;
  long a = strtol(spec, &end, 10);
  long b = a;
  if (end == spec) return -1;
  if (*end == '-') {
    const char* rest = end + 1;
    b = strtol(rest, &end, 10);
    if (end == rest) return -1;
  }
  if (*end != '\0' || a < 0 || b < a || b >= total) return -1;
  *first = (int)a;
  return (int)(b - a + 1);
}

/* The cores a process would get: VISIBLE_CORES wins over NUM_CORES (0 = all). Count, or -1 when invalid. */
static int requested_cores(int total, int* first, int* num_cores) {
  const char* visible = getenv("NEURON_RT_VISIBLE_CORES");
  *first = 0;
  *num_cores = 0;
  if (visible && *visible) return parse_visible(visible, total, first);
  int n = env_int("NEURON_RT_NUM_CORES", 0);
  if (n < 0 || n > total) return -1;
  *num_cores = n;
  return n == 0 ? total : n;
}

static int lock_core(int global) {
  char path[4096];
  snprintf(path, sizeof path, "%s/vnc%d.lock", FAKE_NRT_STATE_DIR, global);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* ----------------------------------------------------------------------------------------- init, info */
NRT_STATUS nrt_get_version(nrt_version_t* ver, size_t size) {
  nrt_version_t v;
  memset(&v, 0, sizeof v);
  v.rt_major = FAKE_NRT_VERSION_MAJOR;
  v.rt_minor = FAKE_NRT_VERSION_MINOR;
  snprintf(v.rt_detail, sizeof v.rt_detail, "torchneuron contract fake of libnrt (%s)", FAKE_NRT_TARGET);
  snprintf(v.git_hash, sizeof v.git_hash, "fake");
  if (ver == NULL) return NRT_INVALID;
  memcpy(ver, &v, size < sizeof v ? size : sizeof v);
  return NRT_SUCCESS;
}

NRT_STATUS nrt_get_instance_info(nrt_instance_info_t* info, size_t len) {
  nrt_instance_info_t i;
  memset(&i, 0, sizeof i);
  i.family = FAKE_NRT_FAMILY;
  i.size = FAKE_NRT_SIZE;
  snprintf(i.arch_name, sizeof i.arch_name, "%s", FAKE_NRT_TARGET);
  snprintf(i.device_revision, sizeof i.device_revision, "fake");
  if (info == NULL) return NRT_INVALID;
  memcpy(info, &i, len < sizeof i ? len : sizeof i);
  return NRT_SUCCESS;
}

/* Callable before nrt_init (as documented): what the environment would give this process. */
NRT_STATUS nrt_get_visible_vnc_count(uint32_t* vnc_count) {
  if (vnc_count == NULL) return NRT_INVALID;
  pthread_mutex_lock(&g_lock);
  if (g_state == RUNNING) {
    *vnc_count = (uint32_t)g_visible;
    pthread_mutex_unlock(&g_lock);
    return NRT_SUCCESS;
  }
  pthread_mutex_unlock(&g_lock);
  int lnc = lnc_config();
  if (lnc < 0) return NRT_INVALID;
  int first, num;
  int n = requested_cores(FAKE_NRT_PHYSICAL_CORES / lnc, &first, &num);
  if (n < 0) return NRT_INVALID;
  *vnc_count = (uint32_t)n;
  return NRT_SUCCESS;
}

static void release_cores(void) {
  for (int i = 0; i < g_visible; ++i) {
    if (g_lock_fds[i] >= 0) close(g_lock_fds[i]);
    g_lock_fds[i] = -1;
  }
}

static int parse_verbosity(void) {
  const char* v = getenv("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY");
  if (v == NULL || *v == '\0' || strcasecmp(v, "none") == 0) return 0;
  if (strcasecmp(v, "critical") == 0) return 1;
  if (strcasecmp(v, "debug") == 0) return 2;
  if (strcasecmp(v, "verbose") == 0) return 3;
  return -1;
}

NRT_STATUS nrt_init(nrt_framework_type_t framework, const char* fw_version, const char* fal_version) {
  (void)fw_version;
  (void)fal_version;
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = NRT_SUCCESS;
  if (g_state == RUNNING) {
    say("nrt_init called twice");
    st = NRT_FAILURE;
    goto out;
  }
  if (framework <= NRT_FRAMEWORK_TYPE_INVALID || framework > NRT_FRAMEWORK_TYPE_PRECHECK) {
    say("nrt_init: invalid framework type %d", (int)framework);
    st = NRT_INVALID;
    goto out;
  }
  if ((st = (NRT_STATUS)injected("nrt_init")) != NRT_SUCCESS) goto out;
  g_lnc = lnc_config();
  if (g_lnc < 0) {
    say("nrt_init: NEURON_LOGICAL_NC_CONFIG=%s is not a logical core config of this instance (1%s)",
        getenv("NEURON_LOGICAL_NC_CONFIG"), FAKE_NRT_DEFAULT_LNC > 1 ? " or 2" : "");
    st = NRT_INVALID;
    goto out;
  }
  g_verbosity = parse_verbosity();
  if (g_verbosity < 0) {
    say("nrt_init: NEURON_RT_NUMERICAL_ERRORS_VERBOSITY must be none, critical, debug or verbose");
    st = NRT_INVALID;
    goto out;
  }
  int total = FAKE_NRT_PHYSICAL_CORES / g_lnc, first, num;
  int want = requested_cores(total, &first, &num);
  if (want < 0) {
    say("nrt_init: NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES select no valid cores of the %d logical cores "
        "(an index or an inclusive range like 1-3)", total);
    st = NRT_INVALID;
    goto out;
  }
  g_visible = 0;
  for (int c = (num > 0 ? 0 : first); c < total && g_visible < want; ++c) {
    int fd = lock_core(c);
    if (fd < 0) {
      if (num > 0) continue; /* NEURON_RT_NUM_CORES: any free core will do */
      break;
    }
    g_cores[g_visible] = c;
    g_lock_fds[g_visible] = fd;
    g_visible += 1;
  }
  if (g_visible < want) {
    if (num > 0)
      say("NeuronCore(s) not available - Requested:%d Available:%d", want, g_visible);
    else
      say("NeuronCore(s) not available - Requested:nc%d-nc%d Available:%d", first, first + want - 1, g_visible);
    release_cores();
    g_visible = 0;
    st = NRT_EXEC_NC_BUSY;
    goto out;
  }
  g_limit = (size_t)(FAKE_NRT_HBM_BYTES / (unsigned long long)total);
  for (int i = 0; i < g_visible; ++i) {
    /* Reserved address space with no access rights: the VAs of this core's tensors. */
    void* base = mmap(NULL, g_limit + PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      say("nrt_init: cannot reserve %zu bytes of address space: %s", g_limit, strerror(errno));
      st = NRT_RESOURCE;
      goto out;
    }
    g_va[i] = base;
    g_used[i] = 0;
    g_free_va[i] = NULL;
    give_va(i, (uintptr_t)base + PAGE, g_limit); /* never hand out the base itself */
  }
  g_state = RUNNING;
out:
  pthread_mutex_unlock(&g_lock);
  return st;
}

void nrt_close(void) {
  pthread_mutex_lock(&g_lock);
  if (g_state == RUNNING) {
    release_cores();
    g_state = CLOSED;
  }
  pthread_mutex_unlock(&g_lock);
}

static NRT_STATUS valid_vnc(int vnc, const char* fn) {
  if (vnc >= 0 && vnc < g_visible) return NRT_SUCCESS;
  say("%s: NeuronCore %d is not one of this process's %d (NEURON_RT_VISIBLE_CORES)", fn, vnc, g_visible);
  return NRT_INVALID;
}

NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t* stats, size_t size_in, size_t* size_out) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_get_vnc_memory_stats");
  if (st == NRT_SUCCESS) st = valid_vnc((int)vnc, "nrt_get_vnc_memory_stats");
  if (st == NRT_SUCCESS && stats == NULL) st = NRT_INVALID;
  if (st == NRT_SUCCESS) {
    nrt_vnc_memory_stats_t s = {g_used[vnc], g_limit};
    size_t n = size_in < sizeof s ? size_in : sizeof s;
    memcpy(stats, &s, n);
    if (size_out) *size_out = n;
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

/* --------------------------------------------------------------------------------------------- tensors */
NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t placement, int vnc, size_t size, const char* name,
                               nrt_tensor_t** tensor) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_tensor_allocate");
  if (st != NRT_SUCCESS) goto out;
  if (tensor == NULL) {
    st = NRT_INVALID;
    goto out;
  }
  if (placement != NRT_TENSOR_PLACEMENT_DEVICE) {
    say("nrt_tensor_allocate: only NRT_TENSOR_PLACEMENT_DEVICE is modelled by the fake");
    st = NRT_INVALID;
    goto out;
  }
  if ((st = valid_vnc(vnc, "nrt_tensor_allocate")) != NRT_SUCCESS) goto out;
  if ((st = (NRT_STATUS)injected("nrt_tensor_allocate")) != NRT_SUCCESS) goto out;
  if (size > g_limit - g_used[vnc]) {
    say("nrt_tensor_allocate: %zu bytes do not fit on NeuronCore %d (%zu of %zu bytes in use)", size, vnc,
        g_used[vnc], g_limit);
    st = NRT_RESOURCE;
    goto out;
  }
  size_t span = (size + PAGE - 1) / PAGE * PAGE;
  if (span == 0) span = PAGE;
  uintptr_t va = take_va(vnc, span);
  allocation_t* a = calloc(1, sizeof *a);
  char* bytes = malloc(size ? size : 1);
  if (va == 0 || a == NULL || bytes == NULL) {
    if (va) give_va(vnc, va, span);
    free(a);
    free(bytes);
    st = NRT_RESOURCE;
    goto out;
  }
  memset(bytes, 0xA5, size); /* HBM is not zeroed: reading before writing gives garbage, as on hardware */
  *a = (allocation_t){vnc, size, span, va, bytes, 0, 1};
  struct nrt_tensor* t = calloc(1, sizeof *t);
  *t = (struct nrt_tensor){a, 0, size, 0, {0}};
  snprintf(t->name, sizeof t->name, "%s", name ? name : "");
  g_used[vnc] += size;
  track(t);
  *tensor = t;
out:
  pthread_mutex_unlock(&g_lock);
  return st;
}

void nrt_tensor_free(nrt_tensor_t** tensor) {
  pthread_mutex_lock(&g_lock);
  if (tensor == NULL || *tensor == NULL) goto out;
  if (!tracked(*tensor)) {
    say("nrt_tensor_free: %p is not a live tensor handle (double free?)", (void*)*tensor);
    goto out;
  }
  struct nrt_tensor* t = *tensor;
  untrack(t);
  if (!t->is_slice && !t->alloc->freed) {
    allocation_t* a = t->alloc;
    a->freed = 1;
    if (g_state == RUNNING) {
      g_used[a->vnc] -= a->size;
      give_va(a->vnc, a->va, a->span);
    }
  }
  release(t->alloc);
  free(t);
  *tensor = NULL;
out:
  pthread_mutex_unlock(&g_lock);
}

NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t* source, size_t offset, size_t size, const char* name,
                                     nrt_tensor_t** slice) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_tensor_allocate_slice");
  struct nrt_tensor* src = NULL;
  if (st == NRT_SUCCESS && (slice == NULL || (src = live_tensor(source, "nrt_tensor_allocate_slice")) == NULL))
    st = NRT_INVALID;
  if (st == NRT_SUCCESS) st = in_bounds(src, offset, size, "nrt_tensor_allocate_slice");
  if (st == NRT_SUCCESS) {
    struct nrt_tensor* t = calloc(1, sizeof *t);
    *t = (struct nrt_tensor){src->alloc, src->offset + offset, size, 1, {0}};
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    src->alloc->refs += 1;
    track(t);
    *slice = t;
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

void* nrt_tensor_get_va(const nrt_tensor_t* tensor) {
  pthread_mutex_lock(&g_lock);
  void* va = NULL;
  struct nrt_tensor* t = g_state == RUNNING ? live_tensor(tensor, "nrt_tensor_get_va") : NULL;
  if (t) va = (void*)(t->alloc->va + t->offset);
  pthread_mutex_unlock(&g_lock);
  return va;
}

NRT_STATUS nrt_tensor_read(const nrt_tensor_t* tensor, void* buf, size_t offset, size_t size) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_tensor_read");
  struct nrt_tensor* t = NULL;
  if (st == NRT_SUCCESS && (buf == NULL || (t = live_tensor(tensor, "nrt_tensor_read")) == NULL)) st = NRT_INVALID;
  if (st == NRT_SUCCESS) st = in_bounds(t, offset, size, "nrt_tensor_read");
  if (st == NRT_SUCCESS) st = (NRT_STATUS)injected("nrt_tensor_read");
  if (st == NRT_SUCCESS) memcpy(buf, t->alloc->bytes + t->offset + offset, size);
  pthread_mutex_unlock(&g_lock);
  return st;
}

NRT_STATUS nrt_tensor_write(nrt_tensor_t* tensor, const void* buf, size_t offset, size_t size) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_tensor_write");
  struct nrt_tensor* t = NULL;
  if (st == NRT_SUCCESS && (buf == NULL || (t = live_tensor(tensor, "nrt_tensor_write")) == NULL)) st = NRT_INVALID;
  if (st == NRT_SUCCESS) st = in_bounds(t, offset, size, "nrt_tensor_write");
  if (st == NRT_SUCCESS) st = (NRT_STATUS)injected("nrt_tensor_write");
  if (st == NRT_SUCCESS) memcpy(t->alloc->bytes + t->offset + offset, buf, size);
  pthread_mutex_unlock(&g_lock);
  return st;
}

NRT_STATUS nrt_tensor_copy(const nrt_tensor_t* src, size_t src_offset, nrt_tensor_t* dst, size_t dst_offset,
                           size_t size) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_tensor_copy");
  struct nrt_tensor *s = NULL, *d = NULL;
  if (st == NRT_SUCCESS && ((s = live_tensor(src, "nrt_tensor_copy")) == NULL ||
                            (d = live_tensor(dst, "nrt_tensor_copy")) == NULL))
    st = NRT_INVALID;
  if (st == NRT_SUCCESS && s->alloc->vnc != d->alloc->vnc) {
    say("nrt_tensor_copy: device tensors must be on the same NeuronCore (%d and %d)", s->alloc->vnc,
        d->alloc->vnc);
    st = NRT_INVALID;
  }
  if (st == NRT_SUCCESS) st = in_bounds(s, src_offset, size, "nrt_tensor_copy");
  if (st == NRT_SUCCESS) st = in_bounds(d, dst_offset, size, "nrt_tensor_copy");
  if (st == NRT_SUCCESS)
    memmove(d->alloc->bytes + d->offset + dst_offset, s->alloc->bytes + s->offset + src_offset, size);
  pthread_mutex_unlock(&g_lock);
  return st;
}

NRT_STATUS nrt_tensor_memset(nrt_tensor_t* tensor, uint64_t offset, int value, size_t size) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_tensor_memset");
  struct nrt_tensor* t = NULL;
  if (st == NRT_SUCCESS && (t = live_tensor(tensor, "nrt_tensor_memset")) == NULL) st = NRT_INVALID;
  if (st == NRT_SUCCESS) st = in_bounds(t, (size_t)offset, size, "nrt_tensor_memset");
  if (st == NRT_SUCCESS) memset(t->alloc->bytes + t->offset + offset, value, size);
  pthread_mutex_unlock(&g_lock);
  return st;
}

/* ----------------------------------------------------------------------------------------- tensor sets */
typedef struct {
  int count, cap;
  char** names;
  nrt_tensor_t** tensors;
} tensor_set_t;

NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t** result) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_allocate_tensor_set");
  if (st == NRT_SUCCESS && result == NULL) st = NRT_INVALID;
  if (st == NRT_SUCCESS) {
    tensor_set_t* s = calloc(1, sizeof *s);
    track(s);
    *result = s;
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

void nrt_destroy_tensor_set(nrt_tensor_set_t** tensor_set) {
  pthread_mutex_lock(&g_lock);
  if (tensor_set && *tensor_set) {
    if (tracked(*tensor_set)) {
      tensor_set_t* s = *tensor_set;
      untrack(s);
      for (int i = 0; i < s->count; ++i) free(s->names[i]);
      free(s->names);
      free(s->tensors);
      free(s);
    } else {
      say("nrt_destroy_tensor_set: %p is not a live tensor set", *tensor_set);
    }
    *tensor_set = NULL;
  }
  pthread_mutex_unlock(&g_lock);
}

NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t* tensor_set, const char* name, nrt_tensor_t* tensor) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_add_tensor_to_tensor_set");
  if (st == NRT_SUCCESS && (!tracked(tensor_set) || name == NULL || strlen(name) >= NRT_TENSOR_NAME_MAX ||
                            live_tensor(tensor, "nrt_add_tensor_to_tensor_set") == NULL)) {
    say("nrt_add_tensor_to_tensor_set: invalid set, name or tensor");
    st = NRT_INVALID;
  }
  if (st == NRT_SUCCESS) {
    tensor_set_t* s = tensor_set;
    int i = 0;
    while (i < s->count && strcmp(s->names[i], name) != 0) ++i;
    if (i == s->count) {
      if (s->count == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->names = realloc(s->names, (size_t)s->cap * sizeof *s->names);
        s->tensors = realloc(s->tensors, (size_t)s->cap * sizeof *s->tensors);
      }
      s->names[i] = strdup(name);
      s->count += 1;
    }
    s->tensors[i] = tensor; /* add or replace */
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

/* ----------------------------------------------------------------------------------------------- models */
typedef struct {
  char name[NRT_TENSOR_NAME_MAX];
  nrt_tensor_usage_t usage;
  nrt_dtype_t dtype;
  int float_kind; /* 0 not a float, 4 f32, 2 f16, 3 bf16: which NaN test applies */
  size_t size;
  uint32_t ndim;
  uint32_t shape[16];
} io_t;

struct nrt_model {
  int vnc;
  int64_t id; /* the executor's handle */
  size_t neff_size;
  int count, cap;
  io_t* io;
};

static void free_model(struct nrt_model* m) {
  if (m) free(m->io);
  free(m);
}

/* The Python executor (torchneuron.testing.fake_nrt.executor), registered on the first nrt_load. */
typedef int (*load_fn)(int64_t id, const void* neff, size_t size, char* err, size_t errlen);
typedef int (*exec_fn)(int64_t id, int n_in, void** inputs, int n_out, void** outputs, char* err, size_t errlen);
typedef void (*unload_fn)(int64_t id);
static load_fn g_load;
static exec_fn g_exec;
static unload_fn g_unload;
static int64_t g_next_model = 1;

int fake_nrt_register_executor(load_fn load, exec_fn exec, unload_fn unload) {
  g_load = load;
  g_exec = exec;
  g_unload = unload;
  return 0;
}

/* Starts the executor through the CPython API of the process that loaded this library. */
static int start_executor(void) {
  if (g_exec) return 0;
  int (*is_initialized)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
  int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
  void (*release_gil)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
  int (*run)(const char*) = (int (*)(const char*))dlsym(RTLD_DEFAULT, "PyRun_SimpleString");
  if (!is_initialized || !ensure || !release_gil || !run || !is_initialized()) {
    say("executing NEFFs needs a Python process with torchneuron installed (the fake runs a NEFF's StableHLO "
        "on XLA:CPU from Python)");
    return -1;
  }
  Dl_info self;
  if (!dladdr((void*)&start_executor, &self) || self.dli_fname == NULL || strchr(self.dli_fname, '\'')) return -1;
  char code[8192];
  snprintf(code, sizeof code, "import torchneuron.testing.fake_nrt.executor as _fake_nrt_executor\n"
                              "_fake_nrt_executor.install('%s')\n", self.dli_fname);
  int gil = ensure();
  int failed = run(code);
  release_gil(gil);
  return failed || !g_exec ? -1 : 0;
}

static const char* header_line(const char* p, const char* end, char* line, size_t cap) {
  size_t n = 0;
  while (p < end && *p != '\n' && n + 1 < cap) line[n++] = *p++;
  line[n] = '\0';
  return p < end && *p == '\n' ? p + 1 : NULL;
}

/* The fake NEFF format (written by the fake neuronx-cc; see neff_format.py): text header lines, "end", then
 * the StableHLO. Each tensor line: usage name element-type nrt-dtype bytes ndim dims... */
static NRT_STATUS parse_neff(const void* bytes, size_t size, struct nrt_model* m) {
  const char* p = bytes;
  const char* end = p + size;
  char line[1024], usage[16], name[NRT_TENSOR_NAME_MAX], elem[32];
  if (size < strlen(FAKE_NEFF_MAGIC) || memcmp(p, FAKE_NEFF_MAGIC, strlen(FAKE_NEFF_MAGIC)) != 0) {
    say("nrt_load: not a NEFF");
    return NRT_INVALID;
  }
  if (!(p = header_line(p, end, line, sizeof line))) return NRT_INVALID;
  int version = atoi(line + strlen(FAKE_NEFF_MAGIC));
  if (version != FAKE_NEFF_VERSION) {
    say("NEFF version mismatch supported: %d received: %d", FAKE_NEFF_VERSION, version);
    return NRT_UNSUPPORTED_NEFF_VERSION;
  }
  while (p && (p = header_line(p, end, line, sizeof line))) {
    if (strcmp(line, "end") == 0) return NRT_SUCCESS;
    char value[64];
    if (sscanf(line, "target %63s", value) == 1) {
      if (strcmp(value, FAKE_NRT_TARGET) != 0) {
        say("nrt_load: the NEFF was compiled for %s; this is a %s instance (recompile with --target %s)", value,
            FAKE_NRT_TARGET, FAKE_NRT_TARGET);
        return NRT_INVALID;
      }
    } else if (sscanf(line, "lnc %63s", value) == 1) {
      if (atoi(value) != g_lnc) {
        say("nrt_load: the NEFF was compiled for LNC=%s; the runtime runs LNC=%d (NEURON_LOGICAL_NC_CONFIG)", value,
            g_lnc);
        return NRT_INVALID;
      }
    } else if (strncmp(line, "tensor ", 7) == 0) {
      if (m->count == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 8;
        m->io = realloc(m->io, (size_t)m->cap * sizeof *m->io);
      }
      io_t* io = &m->io[m->count];
      memset(io, 0, sizeof *io);
      int dtype, consumed;
      unsigned ndim;
      if (sscanf(line, "tensor %15s %255s %31s %d %zu %u%n", usage, name, elem, &dtype, &io->size, &ndim,
                 &consumed) != 6 ||
          ndim > 16) {
        say("nrt_load: malformed NEFF tensor entry '%s'", line);
        return NRT_INVALID;
      }
      snprintf(io->name, sizeof io->name, "%s", name);
      io->usage = strcmp(usage, "input") == 0 ? NRT_TENSOR_USAGE_INPUT : NRT_TENSOR_USAGE_OUTPUT;
      io->dtype = (nrt_dtype_t)dtype;
      io->float_kind = strcmp(elem, "f32") == 0 ? 4 : strcmp(elem, "f16") == 0 ? 2 : strcmp(elem, "bf16") == 0 ? 3 : 0;
      io->ndim = ndim;
      const char* dims = line + consumed;
      for (unsigned d = 0; d < ndim; ++d) {
        int used = 0;
        if (sscanf(dims, " %u%n", &io->shape[d], &used) != 1) return NRT_INVALID;
        dims += used;
      }
      m->count += 1;
    }
  }
  say("nrt_load: NEFF header has no end");
  return NRT_INVALID;
}

static struct nrt_model* live_model(const nrt_model_t* model, const char* fn) {
  if (model == NULL || !tracked(model)) {
    say("%s: %p is not a loaded model", fn, (const void*)model);
    return NULL;
  }
  return (struct nrt_model*)model;
}

NRT_STATUS nrt_load(const void* neff_bytes, size_t size, int32_t vnc, int32_t vnc_count, nrt_model_t** model) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_load");
  struct nrt_model* m = NULL;
  if (st != NRT_SUCCESS) goto out;
  if (neff_bytes == NULL || model == NULL) {
    st = NRT_INVALID;
    goto out;
  }
  if (vnc_count != -1) {
    say("nrt_load: vnc_count is deprecated and must be -1, got %d", vnc_count);
    st = NRT_INVALID;
    goto out;
  }
  if (vnc == -1) vnc = 0;
  if ((st = valid_vnc(vnc, "nrt_load")) != NRT_SUCCESS) goto out;
  if ((st = (NRT_STATUS)injected("nrt_load")) != NRT_SUCCESS) goto out;
  m = calloc(1, sizeof *m);
  if ((st = parse_neff(neff_bytes, size, m)) != NRT_SUCCESS) goto out;
  if (size > g_limit - g_used[vnc]) {
    say("nrt_load: the %zu-byte NEFF does not fit on NeuronCore %d", size, vnc);
    st = NRT_RESOURCE;
    goto out;
  }
  m->vnc = vnc;
  m->id = g_next_model++;
  m->neff_size = size;
  pthread_mutex_unlock(&g_lock);
  char err[1024] = "";
  int failed = start_executor() != 0 || g_load(m->id, neff_bytes, size, err, sizeof err) != 0;
  pthread_mutex_lock(&g_lock);
  if (failed) {
    say("nrt_load: the NEFF's program could not be loaded: %s", err);
    st = NRT_INVALID;
    goto out;
  }
  g_used[vnc] += size;
  track(m);
  *model = (nrt_model_t*)m;
  m = NULL;
out:
  free_model(m);
  pthread_mutex_unlock(&g_lock);
  return st;
}

NRT_STATUS nrt_unload(nrt_model_t* model) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_unload");
  struct nrt_model* m = NULL;
  if (st == NRT_SUCCESS && (m = live_model(model, "nrt_unload")) == NULL) st = NRT_INVALID;
  if (st == NRT_SUCCESS) {
    untrack(m);
    g_used[m->vnc] -= m->neff_size;
    int64_t id = m->id;
    free_model(m);
    pthread_mutex_unlock(&g_lock);
    if (g_unload) g_unload(id);
    return NRT_SUCCESS;
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

NRT_STATUS nrt_get_model_tensor_info(nrt_model_t* model, nrt_tensor_info_array_t** tensor_info) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_get_model_tensor_info");
  struct nrt_model* m = NULL;
  if (st == NRT_SUCCESS && (tensor_info == NULL || (m = live_model(model, "nrt_get_model_tensor_info")) == NULL))
    st = NRT_INVALID;
  if (st == NRT_SUCCESS) {
    nrt_tensor_info_array_t* a = calloc(1, sizeof *a + (size_t)m->count * sizeof(nrt_tensor_info_t));
    a->tensor_count = (uint64_t)m->count;
    for (int i = 0; i < m->count; ++i) {
      nrt_tensor_info_t* t = &a->tensor_array[i];
      snprintf(t->name, sizeof t->name, "%s", m->io[i].name);
      t->usage = m->io[i].usage;
      t->size = m->io[i].size;
      t->dtype = m->io[i].dtype;
      t->ndim = m->io[i].ndim;
      t->shape = calloc(m->io[i].ndim ? m->io[i].ndim : 1, sizeof(uint32_t));
      memcpy(t->shape, m->io[i].shape, m->io[i].ndim * sizeof(uint32_t));
    }
    *tensor_info = a;
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t* tensor_info) {
  if (tensor_info == NULL) return NRT_INVALID;
  for (uint64_t i = 0; i < tensor_info->tensor_count; ++i) free(tensor_info->tensor_array[i].shape);
  free(tensor_info);
  return NRT_SUCCESS;
}

/* ------------------------------------------------------------------------------------------- execution */
static int has_nonfinite(const io_t* io, const unsigned char* p, int infinities) {
  size_t n = io->float_kind == 4 ? io->size / 4 : io->float_kind ? io->size / 2 : 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t exp_all, mant;
    if (io->float_kind == 4) {
      uint32_t v;
      memcpy(&v, p + 4 * i, 4);
      exp_all = (v & 0x7f800000u) == 0x7f800000u;
      mant = v & 0x007fffffu;
    } else {
      uint16_t v;
      memcpy(&v, p + 2 * i, 2);
      exp_all = io->float_kind == 2 ? (v & 0x7c00u) == 0x7c00u : (v & 0x7f80u) == 0x7f80u;
      mant = io->float_kind == 2 ? (v & 0x03ffu) : (v & 0x007fu);
    }
    if (exp_all && (mant || infinities)) return 1;
  }
  return 0;
}

static nrt_tensor_t* find_in_set(tensor_set_t* s, const char* name) {
  for (int i = 0; i < s->count; ++i)
    if (strcmp(s->names[i], name) == 0) return s->tensors[i];
  return NULL;
}

NRT_STATUS nrt_execute(nrt_model_t* model, const nrt_tensor_set_t* input_set, nrt_tensor_set_t* output_set) {
  pthread_mutex_lock(&g_lock);
  NRT_STATUS st = running("nrt_execute");
  struct nrt_model* m = NULL;
  void** inputs = NULL;
  void** outputs = NULL;
  const io_t** out_io = NULL;
  int n_in = 0, n_out = 0;
  if (st != NRT_SUCCESS) goto out;
  if ((m = live_model(model, "nrt_execute")) == NULL || !tracked(input_set) || !tracked(output_set)) {
    say("nrt_execute: invalid model or tensor set");
    st = NRT_INVALID;
    goto out;
  }
  inputs = calloc((size_t)m->count + 1, sizeof *inputs);
  outputs = calloc((size_t)m->count + 1, sizeof *outputs);
  out_io = calloc((size_t)m->count + 1, sizeof *out_io);
  for (int i = 0; i < m->count; ++i) {
    const io_t* io = &m->io[i];
    tensor_set_t* set = (tensor_set_t*)(io->usage == NRT_TENSOR_USAGE_INPUT ? input_set : output_set);
    nrt_tensor_t* found = find_in_set(set, io->name);
    struct nrt_tensor* t = found ? live_tensor(found, "nrt_execute") : NULL;
    if (t == NULL || t->size != io->size || t->alloc->vnc != m->vnc) {
      say("nrt_execute: %s '%s' (%zu bytes on NeuronCore %d) is %s", io->usage == NRT_TENSOR_USAGE_INPUT ? "input"
          : "output", io->name, io->size, m->vnc, found == NULL ? "missing from its tensor set" : t == NULL
          ? "not a live tensor" : t->size != io->size ? "given a tensor of another size" : "on another NeuronCore");
      st = NRT_INVALID;
      goto out;
    }
    void* data = t->alloc->bytes + t->offset;
    if (io->usage == NRT_TENSOR_USAGE_INPUT) {
      inputs[n_in++] = data;
    } else {
      out_io[n_out] = io;
      outputs[n_out++] = data;
    }
  }
  int injected_status = injected("nrt_execute");
  int64_t id = m->id;
  pthread_mutex_unlock(&g_lock); /* the executor takes the GIL: never hold this lock while waiting for it */
  char err[4096] = "";
  int status = g_exec ? g_exec(id, n_in, inputs, n_out, outputs, err, sizeof err) : NRT_FAILURE;
  pthread_mutex_lock(&g_lock);
  if (status != NRT_SUCCESS) {
    say("nrt_execute: %s", err[0] ? err : "the executor failed");
    st = (NRT_STATUS)status;
    goto out;
  }
  if (injected_status != NRT_SUCCESS) {
    st = (NRT_STATUS)injected_status;
    goto out;
  }
  if (g_verbosity > 0) {
    for (int i = 0; i < n_out; ++i) {
      if (has_nonfinite(out_io[i], outputs[i], g_verbosity >= 3)) {
        say("nrt_execute: output '%s' holds %s", out_io[i]->name, g_verbosity >= 3 ? "NaN or Inf" : "NaN");
        st = NRT_EXEC_COMPLETED_WITH_NUM_ERR;
        break;
      }
    }
  }
out:
  pthread_mutex_unlock(&g_lock);
  free(inputs);
  free(outputs);
  free(out_io);
  return st;
}

/* Every entry point has the exact type nrt_abi.h declares (built with -Werror=incompatible-pointer-types). */
#define FAKE_NRT_SAME_TYPE(ret, name, params) static name##_fn const same_type_##name __attribute__((unused)) = name;
TORCHNEURON_NRT_FUNCTIONS(FAKE_NRT_SAME_TYPE)
