/* counting_iterator.h - the emulated build's thrust::counting_iterator: the
 * value at i is start + i (what kernels/ use of Thrust). */
#ifndef FIRN_EMU_COUNTING_ITERATOR_H
#define FIRN_EMU_COUNTING_ITERATOR_H

#include <cstddef>

namespace thrust
{
template <typename T> struct counting_iterator {
    T start;
    explicit counting_iterator(T s) : start(s) {}
    T operator[](std::ptrdiff_t i) const { return start + (T)i; }
};
} // namespace thrust

#endif
