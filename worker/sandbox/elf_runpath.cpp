#include "worker/sandbox/elf_runpath.h"

#include <cstdint>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

namespace framemill {
namespace {

constexpr size_t kMaxHeaders = 256;        // program headers, dynamic entries (per 64)
constexpr size_t kMaxPathBytes = 1 << 16;  // one run path string

bool ReadAt(int fd, void* buf, size_t n, uint64_t offset) {
  return ::pread(fd, buf, n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n);
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::vector<std::string> Read(int fd, const std::string& origin) {
  std::vector<std::string> dirs;
  Elf64_Ehdr eh{};
  if (!ReadAt(fd, &eh, sizeof(eh), 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
      eh.e_phnum == 0 || eh.e_phnum > kMaxHeaders) {
    return dirs;
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!ReadAt(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), eh.e_phoff)) return dirs;
  const Elf64_Phdr* dynamic = nullptr;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
  }
  if (dynamic == nullptr || dynamic->p_filesz / sizeof(Elf64_Dyn) > kMaxHeaders * 64) return dirs;
  std::vector<Elf64_Dyn> dyn(dynamic->p_filesz / sizeof(Elf64_Dyn));
  if (dyn.empty() || !ReadAt(fd, dyn.data(), dyn.size() * sizeof(Elf64_Dyn), dynamic->p_offset)) {
    return dirs;
  }
  uint64_t strtab = 0, strsz = 0;
  std::vector<uint64_t> entries;  // offsets of the run path strings in the string table
  for (const Elf64_Dyn& d : dyn) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    if (d.d_tag == DT_RUNPATH || d.d_tag == DT_RPATH) entries.push_back(d.d_un.d_val);
  }
  if (entries.empty() || strtab == 0) return dirs;
  // The string table's address is virtual: the file offset comes from the segment holding it.
  uint64_t strtab_offset = 0;
  bool found = false;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type == PT_LOAD && strtab >= p.p_vaddr && strtab < p.p_vaddr + p.p_filesz) {
      strtab_offset = strtab - p.p_vaddr + p.p_offset;
      found = true;
    }
  }
  if (!found) return dirs;
  for (uint64_t entry : entries) {
    if (strsz != 0 && entry >= strsz) continue;
    std::string text(kMaxPathBytes, '\0');
    ssize_t n = ::pread(fd, &text[0], text.size(), static_cast<off_t>(strtab_offset + entry));
    if (n <= 0) continue;
    text.resize(::strnlen(text.data(), static_cast<size_t>(n)));
    std::istringstream in(text);
    std::string dir;
    while (std::getline(in, dir, ':')) {
      dir = ReplaceAll(ReplaceAll(dir, "${ORIGIN}", origin), "$ORIGIN", origin);
      if (!dir.empty() && dir[0] == '/') dirs.push_back(dir);
    }
  }
  return dirs;
}

}  // namespace

std::vector<std::string> ElfRunPaths(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  size_t slash = path.rfind('/');
  std::string origin = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::vector<std::string> dirs = Read(fd, origin);
  ::close(fd);
  return dirs;
}

}  // namespace framemill
