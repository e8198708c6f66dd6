/// @file remote_registry.cpp
/// @brief The registry behind find_remote_lesson.
#include "remote/remote_registry.h"

#include <map>
#include <stdexcept>
#include <string>

namespace workbook::remote {
namespace {
std::map<int, RemoteLesson>& lessons() {
    static std::map<int, RemoteLesson> m;
    return m;
}
}  // namespace

bool register_remote_lesson(int lesson, const RemoteLesson& remote) {
    if (!lessons().emplace(lesson, remote).second)
        throw std::logic_error("two remote tables register lesson " + std::to_string(lesson));
    return true;
}

const RemoteLesson* find_remote_lesson(int lesson) {
    auto it = lessons().find(lesson);
    return it == lessons().end() ? nullptr : &it->second;
}

}  // namespace workbook::remote
