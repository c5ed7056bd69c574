// A stand-in ffprobe (config key `ffprobe`) that does what a file exploiting a demuxer would:
// reads the file named by FRAMEMILL_TEST_SECRET_FILE, creates FRAMEMILL_TEST_DROP_FILE and
// connects a TCP socket to 127.0.0.1:1. It says on stderr what it got, one line:
//   hostile ffprobe: read <the file's first line> | denied (...), write ok | denied (...),
//   tcp <errno name>
// and exits 1, so the job that asked it fails (sandbox_test.cpp, "media tools").
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace {

std::string Denied() { return std::string("denied (") + std::strerror(errno) + ")"; }

std::string TryRead(const char* path) {
  if (path == nullptr) return "no file named";
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return Denied();
  char line[256] = {0};
  if (std::fgets(line, sizeof(line), f) == nullptr) line[0] = '\0';
  std::fclose(f);
  std::string s(line);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::string TryWrite(const char* path) {
  if (path == nullptr) return "no file named";
  int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Denied();
  ::close(fd);
  return "ok";
}

std::string TryTcp() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return std::string("socket: ") + strerrorname_np(errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(1);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int r = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  const int e = errno;
  ::close(s);
  return r == 0 ? std::string("connected") : std::string(strerrorname_np(e));
}

}  // namespace

int main() {
  const std::string read = TryRead(std::getenv("FRAMEMILL_TEST_SECRET_FILE"));
  const std::string write = TryWrite(std::getenv("FRAMEMILL_TEST_DROP_FILE"));
  const std::string tcp = TryTcp();
  std::fprintf(stderr, "hostile ffprobe: read %s, write %s, tcp %s\n", read.c_str(), write.c_str(),
               tcp.c_str());
  return 1;
}
