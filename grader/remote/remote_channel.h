/// @file remote_channel.h
/// @brief The channel between the grader and the process that holds a submission's code: messages
///        on a Unix SOCK_SEQPACKET socket, each with an optional file descriptor (shared memory).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace workbook::remote {

/// What a message is.
enum class Kind : uint32_t {
    hello = 1,    ///< host -> grader: the library loaded (or why not)
    share = 2,    ///< grader -> host: a buffer's memory, its descriptor attached
    release = 3,  ///< grader -> host: a shared buffer was freed
    call = 4,     ///< grader -> host: one entry-point call; answered by `reply`
    batch = 5,    ///< grader -> host: calls in order, then one wait for the device; answered by `reply`
    reply = 6,    ///< host -> grader: what the call returned
    failure = 7,  ///< host -> grader: the call could not be made or its kernels failed (text)
    /// grader -> host: calls in order, queued on the host's stream behind a wait for a shared word (the
    /// grader's go) and followed by a write of another (done); answered by `reply` once queued, then by
    /// `reply` again once the device is done (remote_student.cu, "the stream clock").
    timed_batch = 8,
};

/// The other side went away, broke the protocol, or did not answer in time.
class ChannelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Bytes of a message body, written field by field.
class Writer {
public:
    template <typename T>
    void put(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto* p = reinterpret_cast<const unsigned char*>(&v);
        bytes_.insert(bytes_.end(), p, p + sizeof(T));
    }
    void put_text(const std::string& s) {
        put<uint32_t>(static_cast<uint32_t>(s.size()));
        bytes_.insert(bytes_.end(), s.begin(), s.end());
    }
    void append(const std::vector<unsigned char>& more) { bytes_.insert(bytes_.end(), more.begin(), more.end()); }
    const std::vector<unsigned char>& bytes() const { return bytes_; }
    void clear() { bytes_.clear(); }

private:
    std::vector<unsigned char> bytes_;
};

/// Reads a message body back, refusing to run past its end.
class Reader {
public:
    explicit Reader(const std::vector<unsigned char>& bytes) : bytes_(bytes) {}
    template <typename T>
    T get() {
        static_assert(std::is_trivially_copyable_v<T>);
        if (at_ + sizeof(T) > bytes_.size()) throw ChannelError("a message ended early");
        T v;
        std::memcpy(&v, bytes_.data() + at_, sizeof(T));
        at_ += sizeof(T);
        return v;
    }
    std::string get_text() {
        const uint32_t n = get<uint32_t>();
        if (at_ + n > bytes_.size()) throw ChannelError("a message ended early");
        std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
        at_ += n;
        return s;
    }
    bool done() const { return at_ == bytes_.size(); }

private:
    const std::vector<unsigned char>& bytes_;
    size_t at_ = 0;
};

/// One received message.
struct Message {
    Kind kind{};
    std::vector<unsigned char> body;
    int fd = -1;  ///< received descriptor, owned by the receiver (closed by whoever uses it)
};

/// One end of a SOCK_SEQPACKET socket pair.
class Channel {
public:
    explicit Channel(int fd) : fd_(fd) {}
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    /// Sends one message, with `fd` attached when >= 0. Throws ChannelError when the peer is gone.
    void send(Kind kind, const std::vector<unsigned char>& body, int fd = -1);
    /// Receives one message; waits at most `seconds` (< 0: for ever). Throws ChannelError on end of
    /// file, a timeout, or a message that is not well formed.
    Message receive(double seconds);

private:
    int fd_;
};

}  // namespace workbook::remote
