#include "common/load_request.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"

namespace framemill {
namespace {

constexpr size_t kHeaderBytes = sizeof(kLoadRequestMagic) + sizeof(uint32_t);
constexpr uint64_t kRestOfRequestMs = 5000;  // after its first byte

void CloseAll(std::vector<int>* fds) {
  for (int fd : *fds) ::close(fd);
  fds->clear();
}

// The descriptors of one received message's control data, appended to `fds`.
void TakeDescriptors(msghdr* msg, std::vector<int>* fds) {
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const int* data = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, data + i, sizeof(fd));
      fds->push_back(fd);
    }
  }
}

}  // namespace

Status SendLoadRequest(int sock, const std::vector<std::string>& arguments,
                       const std::vector<int>& fds) {
  if (fds.size() != kLoadRequestFds) {
    return Status(StatusCode::kInternal, "a load request carries the model and the log");
  }
  std::string payload;
  for (const std::string& a : arguments) {
    payload += a;
    payload += '\0';
  }
  if (payload.size() > kMaxLoadRequestBytes) {
    return Status(StatusCode::kInternal, "load request of " + std::to_string(payload.size()) +
                                             " bytes, over " +
                                             std::to_string(kMaxLoadRequestBytes));
  }
  std::string message(kLoadRequestMagic, sizeof(kLoadRequestMagic));
  const uint32_t length = static_cast<uint32_t>(payload.size());
  message.append(reinterpret_cast<const char*>(&length), sizeof(length));
  message += payload;

  iovec iov{message.data(), message.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(kLoadRequestFds * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(kLoadRequestFds * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), kLoadRequestFds * sizeof(int));
  ssize_t sent;
  do {
    sent = ::sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    return Status(StatusCode::kIo, std::string("sending the load request: ") + std::strerror(errno));
  }
  if (static_cast<size_t>(sent) != message.size()) {
    // The rest cannot follow in order with others' bytes: the caller gives the worker up.
    return Status(StatusCode::kIo, "the load request went only in part (" + std::to_string(sent) +
                                       " of " + std::to_string(message.size()) + " bytes)");
  }
  return Status::Ok();
}

Status SendLaunchRequest(int sock, const WorkerLaunch& launch, const std::vector<int>& fds) {
  return SendLoadRequest(sock, EncodeLoadRequest(launch), fds);
}

Result<LoadRequest> ReceiveLoadRequest(int sock, const std::function<bool()>& keep_waiting,
                                       int poll_ms) {
  LoadRequest request;
  std::string bytes;
  uint64_t deadline = 0;  // set by the first byte
  size_t wanted = kHeaderBytes;
  auto fail = [&](const std::string& why) -> Result<LoadRequest> {
    CloseAll(&request.fds);
    return Status(StatusCode::kIo, "load request: " + why);
  };
  while (bytes.size() < wanted) {
    pollfd p{sock, POLLIN, 0};
    int wait_ms = poll_ms;
    if (deadline != 0) {
      const uint64_t now = MonotonicMs();
      if (now >= deadline) return fail("it stopped short (" + std::to_string(bytes.size()) +
                                       " of " + std::to_string(wanted) + " bytes)");
      wait_ms = static_cast<int>(std::min<uint64_t>(deadline - now, static_cast<uint64_t>(poll_ms)));
    }
    const int n = ::poll(&p, 1, wait_ms);
    if (n < 0 && errno != EINTR) return fail(std::string("poll: ") + std::strerror(errno));
    if (n <= 0) {
      if (deadline == 0 && !keep_waiting()) {
        return Status(StatusCode::kCancelled, "stopped waiting for a load request");
      }
      continue;
    }
    char buf[4096];
    const size_t room = std::min(sizeof(buf), wanted - bytes.size());
    iovec iov{buf, room};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t got = ::recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return fail(std::string("recvmsg: ") + std::strerror(errno));
    }
    TakeDescriptors(&msg, &request.fds);
    if ((msg.msg_flags & MSG_CTRUNC) != 0) return fail("more descriptors than it may carry");
    if (got == 0) return fail("the supervisor closed the socket");
    if (bytes.empty() && buf[0] != kLoadRequestMagic[0]) {
      // A wake-up byte: the supervisor's stop.
      CloseAll(&request.fds);
      request.stop = true;
      return request;
    }
    bytes.append(buf, static_cast<size_t>(got));
    if (deadline == 0) deadline = MonotonicMs() + kRestOfRequestMs;
    if (wanted == kHeaderBytes && bytes.size() >= kHeaderBytes) {
      if (std::memcmp(bytes.data(), kLoadRequestMagic, sizeof(kLoadRequestMagic)) != 0) {
        return fail("it does not begin as one");
      }
      uint32_t length;
      std::memcpy(&length, bytes.data() + sizeof(kLoadRequestMagic), sizeof(length));
      if (length > kMaxLoadRequestBytes) {
        return fail("a payload of " + std::to_string(length) + " bytes");
      }
      wanted = kHeaderBytes + length;
    }
  }
  if (request.fds.size() != kLoadRequestFds) {
    return fail(std::to_string(request.fds.size()) + " descriptors instead of " +
                std::to_string(kLoadRequestFds));
  }
  const std::string payload = bytes.substr(kHeaderBytes);
  if (!payload.empty() && payload.back() != '\0') return fail("its last argument is unterminated");
  for (size_t at = 0; at < payload.size();) {
    const size_t end = payload.find('\0', at);
    request.arguments.push_back(payload.substr(at, end - at));
    at = end + 1;
  }
  return request;
}

}  // namespace framemill
