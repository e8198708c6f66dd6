/// @file shared.h
/// @brief Targets of the source rewrite for __shared__ declarations (see tools/emu_rewrite.py).
#pragma once

#include <cstddef>

#include "emu/device.h"

/// A key unique to one __shared__ declaration in one template instantiation: the address of
/// a static in a lambda, whose type is distinct per instantiation of the enclosing function.
#define EMU_SHARED_KEY ([]() -> const void* { static char emu_key; return &emu_key; }())

/// `__shared__ T name[N];` becomes
/// `T (&name)[N] = *static_cast<T(*)[N]>(::emu::shared_slot(EMU_SHARED_KEY, sizeof(T[N]), alignof(T[N]),
/// "name", sizeof(T), 1));` and `extern __shared__ T name[];` becomes
/// `T* const name = static_cast<T*>(::emu::dynamic_shared("name", sizeof(T)));`.
