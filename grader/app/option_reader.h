/// @file option_reader.h
/// @brief The command-line reading both graders share (wb-grader and the emulator's wb-grader-emu):
/// options that take a value, the seed, and the messages for a missing or malformed value.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>

namespace workbook {

/// Walks argv one option at a time; `value()` takes the option's argument.
class OptionReader {
public:
    OptionReader(int argc, char** argv) : argc_(argc), argv_(argv) {}

    /// Moves to the next option; false at the end.
    bool next() {
        if (++i_ >= argc_) return false;
        arg_ = argv_[i_];
        return true;
    }
    const std::string& arg() const { return arg_; }

    /// The current option's argument, or nullptr (and `error`) when the command line ends first.
    const char* value(const char* what, std::string& error) {
        if (i_ + 1 >= argc_) {
            error = arg_ + " needs " + what;
            return nullptr;
        }
        return argv_[++i_];
    }

    /// `--seed S`: a whole number (decimal or 0x...); false (and `error`) otherwise.
    bool seed(uint64_t& out, std::string& error) {
        const char* v = value("a number", error);
        if (!v) return false;
        char* end = nullptr;
        out = std::strtoull(v, &end, 0);
        if (!end || *end) {
            error = std::string("--seed takes a whole number, not '") + v + "'";
            return false;
        }
        return true;
    }

private:
    int argc_;
    char** argv_;
    int i_ = 0;
    std::string arg_;
};

}  // namespace workbook
