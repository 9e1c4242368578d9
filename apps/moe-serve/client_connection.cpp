// client_connection.h implementation. Covered by tests/serving/client_connection_test.cpp.
#include "moe-serve/client_connection.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace moe {

namespace {
/// The numeric host and the port of `addr`, as cpp-httplib writes them (getnameinfo, NI_NUMERICHOST).
bool same_end(const sockaddr_storage& addr, socklen_t len, const std::string& host, int port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  return host == h && port == std::atoi(p);
}

bool has_ends(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || !same_end(a, len, remote_addr, remote_port))
    return false;
  len = sizeof a;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 && same_end(a, len, local_addr, local_port);
}
/// The first of this process's descriptors (/proc/self/fd) for which `pred` holds, or -1.
template <class Pred>
int find_descriptor(Pred pred) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  const int own = dirfd(dir);
  int found = -1;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || end == e->d_name || fd == own) continue;
    if (pred(static_cast<int>(fd))) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

int port_of(const sockaddr_storage& a) {
  return a.ss_family == AF_INET    ? ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port)
         : a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port)
                                   : -1;
}
}  // namespace

void raise_listen_backlog(int port) {
  const int fd = find_descriptor([port](int fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    sockaddr_storage a{};
    socklen_t alen = sizeof a;
    return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening &&
           getsockname(fd, reinterpret_cast<sockaddr*>(&a), &alen) == 0 && port_of(a) == port;
  });
  if (fd >= 0) ::listen(fd, SOMAXCONN);
}

ClientConnection::ClientConnection(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                   int remote_port) {
  fd_ = find_descriptor(
      [&](int fd) { return has_ends(fd, local_addr, local_port, remote_addr, remote_port); });
}

bool ClientConnection::closed() const {
  if (fd_ < 0) return false;
  pollfd p{.fd = fd_, .events = POLLRDHUP, .revents = 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace moe
