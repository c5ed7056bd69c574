// A stand-in ffprobe or ffmpeg (config key `ffprobe`, `ffmpeg`) that does what a file exploiting
// a demuxer would: reads the file named by FRAMEMILL_TEST_SECRET_FILE, creates
// FRAMEMILL_TEST_DROP_FILE (writing there what it read) and connects a TCP socket to 127.0.0.1:1.
// It says on stderr what it got, one line:
//   hostile media tool: read <the file's first line> | denied (...), write ok | denied (...),
//   tcp <errno name>
// Then, when every attempt failed and FRAMEMILL_TEST_THEN_EXEC names a program, it executes that
// program with its own arguments (the real ffmpeg: the job goes on); else it exits 1, so the job
// that asked it fails (sandbox_test.cpp, "media tools"). With FRAMEMILL_TEST_ATTACK_ROLE set
// (decoder: it writes raw frames to its stdout; encoder: it reads them from its stdin; mux: it
// joins a concat list) it attacks in that role only and is the real program in the others; the
// line it writes to the drop file begins with its role.
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

std::string TryWrite(const char* path, const std::string& text) {
  if (path == nullptr) return "no file named";
  int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Denied();
  const std::string line = text + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return written ? "ok" : Denied();
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

// What a job asked of ffmpeg, from its arguments.
std::string RoleOf(int argc, char** argv) {
  std::string role = "other";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "concat") return "mux";
    if (arg == "pipe:0") role = "encoder";
    if (arg == "pipe:1" && role == "other") role = "decoder";
  }
  return role;
}

int main(int argc, char** argv) {
  const std::string role = RoleOf(argc, argv);
  const char* then = std::getenv("FRAMEMILL_TEST_THEN_EXEC");
  const char* only = std::getenv("FRAMEMILL_TEST_ATTACK_ROLE");
  if (only != nullptr && role != only && then != nullptr) {
    argv[0] = const_cast<char*>(then);
    ::execv(then, argv);
    return 127;
  }
  const std::string read = TryRead(std::getenv("FRAMEMILL_TEST_SECRET_FILE"));
  const std::string write = TryWrite(std::getenv("FRAMEMILL_TEST_DROP_FILE"), role + ": " + read);
  const std::string tcp = TryTcp();
  std::fprintf(stderr, "hostile media tool: read %s, write %s, tcp %s\n", read.c_str(),
               write.c_str(), tcp.c_str());
  const bool held = read.rfind("denied", 0) == 0 && write.rfind("denied", 0) == 0 &&
                    tcp != "connected" && tcp != "ECONNREFUSED";
  if (!held || then == nullptr) return 1;
  argv[0] = const_cast<char*>(then);
  ::execv(then, argv);
  std::fprintf(stderr, "hostile media tool: cannot execute %s: %s\n", then, std::strerror(errno));
  return 127;
}
