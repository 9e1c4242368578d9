// moe-serve's hang-up detection (apps/moe-serve/client_connection.h) on real loopback sockets: the
// server's end of a connection is found by its addresses; it reads as open while the client waits or
// has pipelined more bytes, and as closed once the client closes its socket.
#include "moe-serve/client_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using namespace moe;

namespace {
int port_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  REQUIRE((peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)) == 0);
  return ntohs(a.sin_port);
}

/// closed() after the kernel has delivered what the client did (bounded wait).
bool closed_soon(const ClientConnection& c) {
  for (int i = 0; i < 100 && !c.closed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return c.closed();
}
}  // namespace

TEST_CASE("a client's hang-up is seen on the server's end of its connection", "[serving]") {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(listener, 4) == 0);
  const int port = port_of(listener, false);
  auto connect_client = [&] {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to = addr;
    to.sin_port = htons(static_cast<uint16_t>(port));
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    return fd;
  };
  const int first = connect_client(), second = connect_client();
  const int served_first = accept(listener, nullptr, nullptr), served_second = accept(listener, nullptr, nullptr);
  REQUIRE((served_first >= 0 && served_second >= 0));

  const ClientConnection c1("127.0.0.1", port, "127.0.0.1", port_of(first, false));
  const ClientConnection c2("127.0.0.1", port, "127.0.0.1", port_of(second, false));
  REQUIRE(c1.found());
  REQUIRE(c2.found());
  CHECK_FALSE(c1.closed());
  REQUIRE(write(first, "GET / HTTP/1.1\r\n", 16) == 16);  // a pipelined request: still open
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(c1.closed());
  close(second);
  CHECK(closed_soon(c2));
  CHECK_FALSE(c1.closed());  // the other connection is not disturbed
  close(first);              // with unread bytes on the server's side: closed all the same
  CHECK(closed_soon(c1));

  CHECK_FALSE(ClientConnection("127.0.0.1", port, "127.0.0.1", 1).found());  // no such connection
  CHECK_FALSE(ClientConnection("127.0.0.1", port, "127.0.0.1", 1).closed());
  for (int fd : {served_first, served_second, listener}) close(fd);
}
