// Diagnosis on a GPU machine without strace: an LD_PRELOAD library that logs to stderr every
// file-system call that fails (and each ioctl or mmap that fails), with the path and errno, so
// that what a driver library misses in a sandbox can be read from a worker's log.
// Build: cc -shared -fPIC -O1 -o libtrace-files.so trace-files.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void Log(const char* call, const char* path, int err) {
  char line[600];
  int n = snprintf(line, sizeof(line), "trace-files: %s %s: %s\n", call, path ? path : "(null)",
                   strerror(err));
  if (n > 0) (void)!write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void FdName(int fd, char* out, size_t size) {
  char link[64];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, size - 1);
  out[n > 0 ? n : 0] = '\0';
}

#define WRAP_OPEN(name)                                                 \
  int name(const char* path, int flags, ...) {                          \
    static int (*real)(const char*, int, ...);                          \
    if (!real) real = dlsym(RTLD_NEXT, #name);                          \
    va_list ap;                                                         \
    va_start(ap, flags);                                                \
    int mode = va_arg(ap, int);                                         \
    va_end(ap);                                                         \
    int r = real(path, flags, mode);                                    \
    if (r < 0) { int e = errno; Log(#name, path, e); errno = e; }       \
    return r;                                                           \
  }
WRAP_OPEN(open)
WRAP_OPEN(open64)

#define WRAP_OPENAT(name)                                               \
  int name(int dir, const char* path, int flags, ...) {                 \
    static int (*real)(int, const char*, int, ...);                     \
    if (!real) real = dlsym(RTLD_NEXT, #name);                          \
    va_list ap;                                                         \
    va_start(ap, flags);                                                \
    int mode = va_arg(ap, int);                                         \
    va_end(ap);                                                         \
    int r = real(dir, path, flags, mode);                               \
    if (r < 0) { int e = errno; Log(#name, path, e); errno = e; }       \
    return r;                                                           \
  }
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)

int __open_2(const char* path, int flags) { return open(path, flags, 0); }
int __open64_2(const char* path, int flags) { return open64(path, flags, 0); }

FILE* fopen(const char* path, const char* mode) {
  static FILE* (*real)(const char*, const char*);
  if (!real) real = dlsym(RTLD_NEXT, "fopen");
  FILE* f = real(path, mode);
  if (!f) { int e = errno; Log("fopen", path, e); errno = e; }
  return f;
}
FILE* fopen64(const char* path, const char* mode) { return fopen(path, mode); }

#define WRAP_PATH2(name, T2)                                            \
  int name(const char* path, T2 b) {                                    \
    static int (*real)(const char*, T2);                                \
    if (!real) real = dlsym(RTLD_NEXT, #name);                          \
    int r = real(path, b);                                              \
    if (r < 0) { int e = errno; Log(#name, path, e); errno = e; }       \
    return r;                                                           \
  }
WRAP_PATH2(access, int)
WRAP_PATH2(stat, struct stat*)
WRAP_PATH2(lstat, struct stat*)
WRAP_PATH2(stat64, struct stat64*)
WRAP_PATH2(lstat64, struct stat64*)
WRAP_PATH2(mkdir, mode_t)

ssize_t readlink(const char* path, char* buf, size_t size) {
  static ssize_t (*real)(const char*, char*, size_t);
  if (!real) real = dlsym(RTLD_NEXT, "readlink");
  ssize_t r = real(path, buf, size);
  if (r < 0 && strncmp(path, "/proc/self/fd/", 14) != 0) { int e = errno; Log("readlink", path, e); errno = e; }
  return r;
}

int ioctl(int fd, unsigned long request, ...) {
  static int (*real)(int, unsigned long, ...);
  if (!real) real = dlsym(RTLD_NEXT, "ioctl");
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  int r = real(fd, request, arg);
  if (r < 0) {
    int e = errno;
    char name[256], what[300];
    FdName(fd, name, sizeof(name));
    snprintf(what, sizeof(what), "%s request 0x%lx", name, request);
    Log("ioctl", what, e);
    errno = e;
  }
  return r;
}

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  static void* (*real)(void*, size_t, int, int, int, off_t);
  if (!real) real = dlsym(RTLD_NEXT, "mmap");
  void* r = real(addr, len, prot, flags, fd, off);
  if (r == MAP_FAILED) {
    int e = errno;
    char name[256] = "", what[400];
    if (fd >= 0) FdName(fd, name, sizeof(name));
    snprintf(what, sizeof(what), "fd %d (%s) len %zu prot %d flags 0x%x", fd, name, len, prot, flags);
    Log("mmap", what, e);
    errno = e;
  }
  return r;
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}

int connect(int fd, const struct sockaddr* a, socklen_t len) {
  static int (*real)(int, const struct sockaddr*, socklen_t);
  if (!real) real = dlsym(RTLD_NEXT, "connect");
  int r = real(fd, a, len);
  if (r < 0) {
    int e = errno;
    Log("connect", a && a->sa_family == AF_UNIX ? ((const struct sockaddr_un*)a)->sun_path : "?", e);
    errno = e;
  }
  return r;
}
