/// @file test_cluster.cu
/// @brief Thread-block clusters on the emulator: ranks, the cluster barrier (whole and split),
///        distributed shared memory, and the races and faults around them.
#include <cooperative_groups.h>

#include <string>
#include <vector>

#include "emu/control.h"
#include "test_support.h"

namespace {

namespace cg = cooperative_groups;
using emu_test::Buffer;
using emu_test::Emulator;

template <typename... P, typename... A>
cudaError_t launch_clusters(unsigned blocks, unsigned cluster, unsigned threads, void (*kernel)(P...), A... args) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = cluster;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    config.attrs = &attr;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, args...);
}

/// Each block publishes (rank + 1) * 10; after the barrier every thread sums its peers' values
/// through distributed shared memory; a second barrier keeps every block alive while read.
__global__ void dsmem_sum_kernel(int* sums, int* ranks, int* sizes) {
    __shared__ int mine;
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    if (threadIdx.x == 0) mine = static_cast<int>(rank + 1) * 10;
    cluster.sync();
    int total = 0;
    for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(&mine, r);
    cluster.sync();
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    sums[g] = total;
    ranks[g] = static_cast<int>(rank);
    sizes[g] = static_cast<int>(cluster.dim_blocks().x);
}

TEST_F(Emulator, DistributedSharedMemoryReadsEveryPeerAfterTheClusterBarrier) {
    Buffer<int> sums(8 * 64), ranks(8 * 64), sizes(8 * 64);
    ASSERT_EQ(launch_clusters(8, 4, 64, dsmem_sum_kernel, sums.d, ranks.d, sizes.d), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto s = sums.get(), r = ranks.get(), z = sizes.get();
    for (int g = 0; g < 8 * 64; ++g) {
        EXPECT_EQ(s[g], 10 + 20 + 30 + 40) << g;  // ranks 0..3 of each cluster of 4
        EXPECT_EQ(r[g], (g / 64) % 4) << g;       // the rank follows blockIdx.x inside the cluster
        EXPECT_EQ(z[g], 4) << g;
    }
}

/// The cluster's size comes from the kernel's declaration, as with nvcc's __cluster_dims__.
__global__ void __cluster_dims__(2, 1, 1) declared_cluster_kernel(int* sums, int* ranks, int* sizes) {
    __shared__ int mine;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mine = static_cast<int>(cluster.block_rank()) + 1;
    cluster.sync();
    const int other = cluster.map_shared_rank(mine, cluster.block_rank() ^ 1u);
    cluster.sync();
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    sums[g] = other;
    ranks[g] = static_cast<int>(cluster.block_rank());
    sizes[g] = static_cast<int>(cluster.num_blocks());
}

TEST_F(Emulator, ClusterDimsOnTheKernelMakeClustersOfATripleChevronLaunch) {
    Buffer<int> other(4 * 32), ranks(4 * 32), sizes(4 * 32);
    declared_cluster_kernel<<<4, 32>>>(other.d, ranks.d, sizes.d);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto o = other.get(), r = ranks.get(), z = sizes.get();
    for (int g = 0; g < 4 * 32; ++g) {
        EXPECT_EQ(r[g], (g / 32) % 2) << g;
        EXPECT_EQ(o[g], ((g / 32) % 2 ^ 1) + 1) << g;  // the other block of the pair
        EXPECT_EQ(z[g], 2) << g;
    }
}

/// The split barrier: arrive after publishing, do other work, wait before reading peers.
__global__ void split_barrier_kernel(int* out) {
    __shared__ int mine;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mine = static_cast<int>(cluster.block_rank()) * 3;
    cluster.barrier_arrive();
    const int local = static_cast<int>(threadIdx.x);  // work that touches no peer's memory
    cluster.barrier_wait();
    const int peer = *cluster.map_shared_rank(&mine, (cluster.block_rank() + 1) % cluster.num_blocks());
    cluster.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = peer + local * 0;
}

TEST_F(Emulator, TheSplitClusterBarrierOrdersWritesBeforeArriveAndReadsAfterWait) {
    Buffer<int> out(4 * 32);
    ASSERT_EQ(launch_clusters(4, 4, 32, split_barrier_kernel, out.d), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto o = out.get();
    for (int g = 0; g < 4 * 32; ++g) EXPECT_EQ(o[g], ((g / 32 + 1) % 4) * 3) << g;
}

/// Thread 0 posts rank + 1 into the peer's mailbox with a volatile store, then spins on its own
/// mailbox with volatile reads until the peer's message comes, and stores it.
__device__ void post_and_wait(cg::cluster_group& cluster, unsigned long long& mailbox, int* out) {
    if (threadIdx.x != 0) return;
    volatile unsigned long long* peer = cluster.map_shared_rank(&mailbox, cluster.block_rank() ^ 1u);
    *peer = (1ull << 32) | (cluster.block_rank() + 1);
    const volatile unsigned long long* mine = &mailbox;
    unsigned long long message = *mine;
    while ((message >> 32) != 1) message = *mine;
    out[blockIdx.x] = static_cast<int>(message & 0xffffffffu);
}

/// Each block posts rank + 1 into its peer's mailbox with a volatile store and spins on its own
/// mailbox with volatile reads, no barrier between: the spin must end (the emulator lets the peer run)
/// and nothing is reported as a race (volatile accesses are relaxed on the GPU).
__global__ void volatile_mailbox_kernel(int* out) {
    __shared__ unsigned long long mailbox;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mailbox = 0;
    cluster.sync();  // every mailbox is empty before any block posts
    post_and_wait(cluster, mailbox, out);
    cluster.sync();  // no block leaves while its peer may still post
}

TEST_F(Emulator, AVolatileSpinOnAPeersMessageEndsAndIsNoRace) {
    Buffer<int> out(4);
    ASSERT_EQ(launch_clusters(4, 2, 64, volatile_mailbox_kernel, out.d), cudaSuccess);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaSuccess) << explain(e);
    const auto o = out.get();
    for (int b = 0; b < 4; ++b) EXPECT_EQ(o[b], static_cast<int>((b % 2 ^ 1) + 1)) << b;  // the peer's rank + 1
}

/// The same exchange with only a block barrier after the mailbox is emptied: a peer that starts late
/// empties its mailbox after this block has posted into it, erasing the message, and then waits for
/// a message that never comes. On the GPU a hang; the emulator starts one block of each cluster only
/// once the others can go no further, so it hangs every time.
__global__ void mailbox_emptied_without_cluster_barrier_kernel(int* out) {
    __shared__ unsigned long long mailbox;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mailbox = 0;
    __syncthreads();  // orders this block's own emptying, not its peer's
    post_and_wait(cluster, mailbox, out);
    cluster.sync();
}

TEST_F(Emulator, AMessageToAPeerThatHasNotStartedIsErasedAndTheSpinHangs) {
    Buffer<int> out(2);
    emu::set_watchdog_seconds(0.5);
    ASSERT_EQ(launch_clusters(2, 2, 64, mailbox_emptied_without_cluster_barrier_kernel, out.d), cudaSuccess);
    const cudaError_t e = cudaDeviceSynchronize();
    emu::set_watchdog_seconds(20);
    ASSERT_EQ(e, cudaErrorLaunchTimeout) << explain(e);
}

/// Reads a peer's shared memory after the cluster barrier but leaves without a second one: a block
/// may exit while its peer still reads from it. Where the late block runs alone once it starts (half
/// the clusters), it reads its peer, leaves, and its peer's read of it then finds an exited block.
__global__ void peer_read_without_final_barrier_kernel(int* out) {
    __shared__ int mine;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mine = static_cast<int>(cluster.block_rank()) + 1;
    cluster.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = *cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1u);
}

TEST_F(Emulator, ALateBlockThatLeavesBeforeItsPeerReadsItIsReported) {
    Buffer<int> out(16 * 64);
    ASSERT_EQ(launch_clusters(16, 2, 64, peer_read_without_final_barrier_kernel, out.d), cudaSuccess);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorIllegalAddress) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("which has already exited"), std::string::npos);
}

/// A block of a cluster that starts late still gets every peer's value once all have passed the
/// cluster barrier: the late start does not change what a correct exchange computes.
TEST_F(Emulator, ALateBlockOfAClusterStillMeetsItsPeersAtTheClusterBarrier) {
    for (unsigned cluster : {2u, 4u, 8u}) {
        Buffer<int> sums(cluster * 2 * 32), ranks(cluster * 2 * 32), sizes(cluster * 2 * 32);
        ASSERT_EQ(launch_clusters(cluster * 2, cluster, 32, dsmem_sum_kernel, sums.d, ranks.d, sizes.d), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const auto s = sums.get();
        for (std::size_t g = 0; g < s.size(); ++g) EXPECT_EQ(s[g], 10 * static_cast<int>(cluster * (cluster + 1) / 2)) << g;
    }
}

constexpr int kPublishLine = __LINE__ + 5;
constexpr int kPeerReadLine = __LINE__ + 6;
__global__ void block_barrier_only_kernel(int* out) {
    __shared__ int mine;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mine = 7;
    __syncthreads();  // orders this block only: the peers' writes are not ordered before the read
    const int peer = *cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1u);
    cluster.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = peer;
}

TEST_F(Emulator, APeersSharedMemoryReadWithoutAClusterBarrierIsARace) {
    Buffer<int> out(2 * 32);
    ASSERT_EQ(launch_clusters(2, 2, 32, block_barrier_only_kernel, out.d), cudaSuccess);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorEmulatorSharedMemoryRace) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("test_cluster.cu:" + std::to_string(kPublishLine)), std::string::npos) << text;
    EXPECT_NE(text.find("test_cluster.cu:" + std::to_string(kPeerReadLine)), std::string::npos) << text;
    EXPECT_NE(text.find("no cluster barrier"), std::string::npos) << text;
}

/// Reads the peer after the barrier, but nothing keeps the peer alive until then. Where block 1
/// starts late and runs alone (one draw in four) it reads block 0 before block 0 leaves, so the test
/// launches eight clusters.
__global__ void exited_peer_kernel(int* out) {
    __shared__ int mine;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mine = 1;
    cluster.sync();
    if (cluster.block_rank() == 0) return;  // block 0 leaves; block 1 still reads its memory
    for (int spin = 0; spin < 4; ++spin) __syncthreads();
    out[threadIdx.x] = *cluster.map_shared_rank(&mine, 0);
}

TEST_F(Emulator, ReadingTheSharedMemoryOfABlockThatExitedIsReported) {
    Buffer<int> out(32);
    ASSERT_EQ(launch_clusters(16, 2, 32, exited_peer_kernel, out.d), cudaSuccess);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorIllegalAddress) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("which has already exited"), std::string::npos);
}

__global__ void divergent_cluster_barrier_kernel() {
    cg::cluster_group cluster = cg::this_cluster();
    // Half of block 1's first warp waits for lanes that went to the cluster barrier instead.
    if (cluster.block_rank() == 1 && threadIdx.x < 16) __syncwarp();
    cluster.sync();
}

TEST_F(Emulator, AClusterBarrierSomeThreadsNeverReachIsReportedNotHung) {
    ASSERT_EQ(launch_clusters(2, 2, 32, divergent_cluster_barrier_kernel), cudaSuccess);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorEmulatorDivergentBarrier) << explain(e);
    const std::string text = cudaGetErrorString(e);
    EXPECT_NE(text.find("divergent cluster barrier"), std::string::npos) << text;
    EXPECT_NE(text.find("16 thread(s) wait at __syncwarp"), std::string::npos) << text;
}

__global__ void cluster_wait_without_arrive_kernel() { cg::this_cluster().barrier_wait(); }

TEST_F(Emulator, AClusterWaitWithoutArriveIsReported) {
    ASSERT_EQ(launch_clusters(2, 2, 32, cluster_wait_without_arrive_kernel), cudaSuccess);
    const cudaError_t e = cudaDeviceSynchronize();
    ASSERT_EQ(e, cudaErrorEmulatorDivergentBarrier) << explain(e);
    EXPECT_NE(std::string(cudaGetErrorString(e)).find("without having arrived"), std::string::npos);
}

TEST_F(Emulator, AGridThatIsNotAWholeNumberOfClustersIsRefused) {
    Buffer<int> out(3 * 64);
    EXPECT_EQ(launch_clusters(3, 2, 64, dsmem_sum_kernel, out.d, out.d, out.d), cudaErrorInvalidValue);
}

/// An H100 answers a cluster occupancy query about a grid of no blocks with cudaErrorInvalidValue
/// (and a count it leaves alone); a kernel that sized its grid from the answer falls back to its
/// own guess there, so it must here too.
TEST_F(Emulator, AClusterOccupancyQueryAboutNoBlocksIsRefused) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 4;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(0);
    config.blockDim = dim3(256);
    config.attrs = &attr;
    config.numAttrs = 1;
    int clusters = -1;
    EXPECT_EQ(cudaOccupancyMaxActiveClusters(&clusters, dsmem_sum_kernel, &config), cudaErrorInvalidValue);
    EXPECT_EQ(clusters, -1);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    config.gridDim = dim3(4);  // one cluster: what the query is for
    EXPECT_EQ(cudaOccupancyMaxActiveClusters(&clusters, dsmem_sum_kernel, &config), cudaSuccess);
    EXPECT_GT(clusters, 0);
}

}  // namespace
