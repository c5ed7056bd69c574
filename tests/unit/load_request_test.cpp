// The load request a spare worker gets (common/load_request.h), over a real socket pair: the
// arguments and both descriptors arrive whole; a wake-up byte reads as a stop; a request that is
// not one, or carries the wrong descriptors, is refused with its descriptors closed.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/load_request.h"
#include "common/shm_protocol.h"

using namespace framemill;

namespace {

struct Pair {
  int fd[2] = {-1, -1};
  Pair() {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fd) == 0);
  }
  ~Pair() {
    for (int f : fd) ::close(f);
  }
};

// Descriptors open in this process.
int OpenFds() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

// A raw message: `bytes`, with `fds` attached.
void SendRaw(int sock, const std::string& bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  REQUIRE(::sendmsg(sock, &msg, 0) == static_cast<ssize_t>(bytes.size()));
}

// A load request's header: the magic and a payload length of `n`.
std::string Header(uint32_t n) {
  std::string header(kLoadRequestMagic, 4);
  header.append(reinterpret_cast<const char*>(&n), 4);
  return header;
}

}  // namespace

TEST_CASE("load request: arguments and the model's and log's descriptors arrive whole") {
  Pair s;
  int model[2], log[2];
  REQUIRE(::pipe(model) == 0);
  REQUIRE(::pipe(log) == 0);
  const std::vector<std::string> args = {"--channel", "1", "--model-label", "", "--tile", "off"};
  REQUIRE(SendLoadRequest(s.fd[0], args, {model[0], log[1]}).ok());
  ::close(model[0]);
  ::close(log[1]);
  Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 20);
  REQUIRE(got.ok());
  CHECK_FALSE(got->stop);
  CHECK(got->arguments == args);
  REQUIRE(got->fds.size() == 2);
  // The descriptors are the pipes' ends: what goes into one comes out of the other.
  REQUIRE(::write(model[1], "m", 1) == 1);
  char c = 0;
  REQUIRE(::read(got->fds[0], &c, 1) == 1);
  CHECK(c == 'm');
  REQUIRE(::write(got->fds[1], "l", 1) == 1);
  REQUIRE(::read(log[0], &c, 1) == 1);
  CHECK(c == 'l');
  CHECK((::fcntl(got->fds[0], F_GETFD) & FD_CLOEXEC) != 0);
  for (int fd : got->fds) ::close(fd);
  for (int fd : {model[1], log[0]}) ::close(fd);
}

TEST_CASE("load request: a request sent in pieces is read to its end") {
  Pair s;
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string payload = std::string("--precision\0fp16\0", 17);
  const std::string message = Header(static_cast<uint32_t>(payload.size())) + payload;
  std::thread sender([&] {
    SendRaw(s.fd[0], message.substr(0, 3), {fds[0], fds[1]});
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    SendRaw(s.fd[0], message.substr(3), {});
  });
  Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 10);
  sender.join();
  REQUIRE(got.ok());
  CHECK(got->arguments == std::vector<std::string>{"--precision", "fp16"});
  CHECK(got->fds.size() == 2);
  for (int fd : got->fds) ::close(fd);
  for (int fd : fds) ::close(fd);
}

TEST_CASE("load request: a wake-up byte is the supervisor's stop") {
  Pair s;
  PostWakeUp(s.fd[0]);
  Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 20);
  REQUIRE(got.ok());
  CHECK(got->stop);
  CHECK(got->fds.empty());
}

TEST_CASE("load request: waiting ends when the caller says so, and a closed socket is an error") {
  Pair s;
  int asked = 0;
  Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [&] { return ++asked < 3; }, 5);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == StatusCode::kCancelled);
  CHECK(asked == 3);
  ::close(s.fd[0]);
  s.fd[0] = -1;
  got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 5);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == StatusCode::kIo);
}

TEST_CASE("load request: wrong descriptors or a broken header are refused, descriptors closed") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  SUBCASE("one descriptor") {
    Pair s;
    const int before = OpenFds();
    std::string message = Header(0);
    SendRaw(s.fd[0], message, {fds[0]});
    Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 5);
    REQUIRE_FALSE(got.ok());
    CHECK(OpenFds() == before);  // the received copies were closed
    CHECK(got.status().message().find("1 descriptors instead of 2") != std::string::npos);
  }
  SUBCASE("not the magic") {
    Pair s;
    const int before = OpenFds();
    SendRaw(s.fd[0], std::string("FMXX\0\0\0\0", 8), {fds[0], fds[1]});
    Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 5);
    REQUIRE_FALSE(got.ok());
    CHECK(OpenFds() == before);  // the received copies were closed
    CHECK(got.status().message().find("does not begin as one") != std::string::npos);
  }
  SUBCASE("a payload over the bound") {
    Pair s;
    const int before = OpenFds();
    std::string message = Header(kMaxLoadRequestBytes + 1);
    SendRaw(s.fd[0], message, {fds[0], fds[1]});
    Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 5);
    REQUIRE_FALSE(got.ok());
    CHECK(OpenFds() == before);  // the received copies were closed
    CHECK(got.status().message().find("a payload of") != std::string::npos);
  }
  SUBCASE("an unterminated last argument") {
    Pair s;
    const int before = OpenFds();
    std::string message = Header(3);
    message += "abc";
    SendRaw(s.fd[0], message, {fds[0], fds[1]});
    Result<LoadRequest> got = ReceiveLoadRequest(s.fd[1], [] { return true; }, 5);
    REQUIRE_FALSE(got.ok());
    CHECK(OpenFds() == before);  // the received copies were closed
    CHECK(got.status().message().find("unterminated") != std::string::npos);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  Pair s;
  CHECK_FALSE(SendLoadRequest(s.fd[0], {"x"}, {0}).ok());  // one descriptor
  CHECK(SendLoadRequest(s.fd[0], {std::string(kMaxLoadRequestBytes, 'x')}, {0, 1}).code() ==
        StatusCode::kInternal);
}
