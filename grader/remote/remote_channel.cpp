/// @file remote_channel.cpp
#include "remote/remote_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace workbook::remote {
namespace {
/// Largest message: a batch of many calls stays far below it.
constexpr size_t kMaxMessage = 1 << 20;
}  // namespace

Channel::~Channel() {
    if (fd_ >= 0) close(fd_);
}

void Channel::send(Kind kind, const std::vector<unsigned char>& body, int fd) {
    std::vector<unsigned char> packet(sizeof(uint32_t) + body.size());
    const auto k = static_cast<uint32_t>(kind);
    std::memcpy(packet.data(), &k, sizeof k);
    if (!body.empty()) std::memcpy(packet.data() + sizeof k, body.data(), body.size());
    iovec iov{packet.data(), packet.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t sent;
    do sent = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(packet.size()))
        throw ChannelError(std::string("the other process is gone (") + std::strerror(errno) + ")");
}

Message Channel::receive(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        int wait_ms = -1;
        if (seconds >= 0) {
            const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
            if (left <= 0) throw ChannelError("no answer within " + std::to_string(static_cast<int>(seconds)) + " s");
            wait_ms = static_cast<int>(left * 1000) + 1;
        }
        pollfd p{fd_, POLLIN, 0};
        const int ready = poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) throw ChannelError(std::string("poll failed: ") + std::strerror(errno));
        if (ready > 0) break;
    }
    std::vector<unsigned char> packet(kMaxMessage);
    iovec iov{packet.data(), packet.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t got;
    do got = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    if (got == 0) throw ChannelError("the other process closed the channel");
    if (got < 0) throw ChannelError(std::string("the channel failed: ") + std::strerror(errno));
    Message m;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&m.fd, CMSG_DATA(c), sizeof(int));
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || got < static_cast<ssize_t>(sizeof(uint32_t))) {
        if (m.fd >= 0) close(m.fd);
        throw ChannelError("a malformed message arrived");
    }
    uint32_t k = 0;
    std::memcpy(&k, packet.data(), sizeof k);
    m.kind = static_cast<Kind>(k);
    m.body.assign(packet.begin() + sizeof k, packet.begin() + got);
    return m;
}

}  // namespace workbook::remote
