"""perpendis.numerics.scramble: the seeded stream that picks sampled positions, in place of numpy.random."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from perpendis.numerics.scramble import Stream, mix64


def test_the_stream_is_splitmix64():
    # The reference outputs of SplitMix64 seeded with 0 (Steele, Lea and Flood 2014; Vigna's splitmix64.c).
    expected = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]
    stream = Stream(0)
    assert [int(v) for v in stream.uint64(2)] + [int(v) for v in stream.uint64(2)] == expected


def test_mix64_is_a_bijection_on_a_block_and_leaves_its_input_alone():
    x = np.arange(1 << 16, dtype=np.uint64)
    assert len(np.unique(mix64(x))) == len(x)
    assert np.array_equal(x, np.arange(1 << 16, dtype=np.uint64))


@given(size=st.integers(1, 10**15), k=st.integers(1, 5000), seed=st.integers(0, 2**64 - 1))
def test_distinct_positions_are_k_distinct_ascending_positions_in_range(size: int, k: int, seed: int):
    positions = Stream(seed).distinct(size, k)
    assert positions.dtype == np.intp
    assert len(positions) == min(size, k)
    assert np.all(np.diff(positions) > 0)
    assert positions[0] >= 0 and positions[-1] < size


def test_all_positions_when_there_are_no_more_than_k():
    assert np.array_equal(Stream(3).distinct(5, 5), np.arange(5))
    assert np.array_equal(Stream(3).distinct(1, 64), [0])


def test_distinct_positions_are_reproducible_and_the_stream_moves_on():
    assert np.array_equal(Stream(7).distinct(10**9, 100), Stream(7).distinct(10**9, 100))
    stream = Stream(7)
    first, second = stream.distinct(10**9, 100), stream.distinct(10**9, 100)
    assert not np.array_equal(first, second)
    assert not np.array_equal(Stream(7).distinct(10**9, 100), Stream(8).distinct(10**9, 100))


def test_distinct_positions_are_a_uniform_subset_even_when_k_is_most_of_size():
    # 20 000 draws of 3 of 10 positions, and of 900 of 1000: each position is chosen k/size of
    # the time, within 5 standard deviations of the binomial count.
    for size, k, runs in ((10, 3, 20_000), (1000, 900, 2_000)):
        stream = Stream(12345)
        counts = np.zeros(size)
        for _ in range(runs):
            counts[stream.distinct(size, k)] += 1
        p = k / size
        assert np.all(np.abs(counts - runs * p) < 5 * np.sqrt(runs * p * (1 - p))), counts
