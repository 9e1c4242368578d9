// Whether the client of the request a handler is answering has hung up, so that its queued sentences can
// be dropped rather than decoded. cpp-httplib 0.11.4 (Debian's) hands a handler no way to see its
// connection: Request has no is_connection_closed (added in later versions), the socket hook
// (Server::process_and_close_socket) is private, and a content provider runs only after the status line
// is sent. So the socket is found by its two ends, which Request does carry (local_addr:local_port,
// remote_addr:remote_port), among this process's descriptors (/proc/self/fd; getsockname/getpeername):
// one connected TCP socket has them. The handler's thread holds the connection while it runs, so the
// descriptor cannot be closed and reused under it (the worker's thread also asks, when it takes the job;
// after the handler returned it may poll a reused descriptor, whose answer no longer matters: the handler
// marked the job abandoned before returning). Hung up means: poll reports POLLRDHUP (the client's
// FIN; a client that only shuts down its sending side counts as gone, as nginx's 499 does), POLLHUP or
// POLLERR (a reset). Bytes the client sent before (a pipelined request) change nothing.
// Covered by tests/serving/client_connection_test.cpp and tests/scripts/serve.sh (disconnect; the backlog).
#pragma once
#include <string>

namespace moe {

/// Debian's cpp-httplib is a shared library built to listen with a backlog of 5: a burst of new connections
/// past it is dropped, and under load some come back to their clients as resets. Listening again on the
/// socket listening on `port` (found among this process's descriptors, as below) raises it to SOMAXCONN.
void raise_listen_backlog(int port);

class ClientConnection {
 public:
  /// The connected socket between local_addr:local_port and remote_addr:remote_port (IPv4 or IPv6
  /// addresses as text); none (found() false) when no descriptor matches.
  ClientConnection(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);
  bool found() const { return fd_ >= 0; }
  /// True once the client has closed (or reset) the connection; false while it is open or not found.
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace moe
