// Every collective of lib/dist/communicator.h against values each rank can compute itself. The same
// binary runs as one process (backend none) and under mpirun -np 2 / -np 4 (backend mpi; ctest's
// dist_mpi2 / dist_mpi4), so each check holds for any world size.
#include <catch2/catch.hpp>
#include <map>

#include "dist/communicator.h"
#include "dist_test_util.h"

using namespace moe;
using moe::test::comm;

TEST_CASE("dist: launch variables of OpenMPI, Slurm and none", "[dist]") {
  auto env = [](std::map<std::string, std::string> vars) {
    return dist::launch_env_from([&](const std::string& k) { return vars.count(k) ? vars[k] : std::string(); });
  };
  const auto none = env({});
  CHECK((none.rank == 0 && none.world == 1 && none.launcher == "none"));
  const auto ompi = env({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                         {"SLURM_PROCID", "5"}});
  CHECK((ompi.rank == 3 && ompi.world == 8 && ompi.local_rank == 1 && ompi.launcher == "openmpi"));
  const auto slurm = env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}});
  CHECK((slurm.rank == 5 && slurm.world == 16 && slurm.local_rank == 1 && slurm.launcher == "slurm"));
  CHECK_THROWS_WITH(env({{"SLURM_PROCID", "x"}}), Catch::Contains("SLURM_PROCID"));
  CHECK_THROWS_WITH(env({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}), Catch::Contains("rank 4 of 4"));
}

TEST_CASE("dist: all_reduce sums in place, also bucketed", "[dist]") {
  dist::Communicator& c = comm();
  const int n = c.world(), r = c.rank();
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(r + 1) * static_cast<float>(i);
  const float factor = static_cast<float>(n * (n + 1) / 2);
  Tensor t = Tensor::from_vector(v, Shape{10, 100});
  c.all_reduce(t);
  Tensor b = Tensor::from_vector(v, Shape{1000});
  c.all_reduce_bucketed(b, 64);  // 15 full buckets and a partial one
  const auto got = t.to_vector<float>(), got_b = b.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    REQUIRE(got[i] == factor * static_cast<float>(i));
    REQUIRE(got_b[i] == factor * static_cast<float>(i));
  }
  CHECK(c.sum(int64_t{r}) == n * (n - 1) / 2);
  CHECK(c.sum(0.5) == 0.5 * n);
  Tensor half = Tensor::zeros(Shape{4}, DType::bf16, Device::cpu());
  if (n > 1) CHECK_THROWS_WITH(c.all_reduce(half), Catch::Contains("bf16"));
}

TEST_CASE("dist: broadcast from every root", "[dist]") {
  dist::Communicator& c = comm();
  for (int root = 0; root < c.world(); ++root) {
    Tensor t = Tensor::from_vector(std::vector<int32_t>{c.rank(), c.rank() * 10, 7}, Shape{3});
    c.broadcast(t, root);
    CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{root, root * 10, 7});
  }
  Tensor t = Tensor::zeros(Shape{1}, DType::f32, Device::cpu());
  CHECK_THROWS_WITH(c.broadcast(t, c.world()), Catch::Contains("root"));
}

TEST_CASE("dist: all_gather and reduce_scatter", "[dist]") {
  dist::Communicator& c = comm();
  const int n = c.world(), r = c.rank();
  const Tensor mine = Tensor::from_vector(std::vector<float>{float(r), float(r) + 0.5f, -float(r)}, Shape{3});
  Tensor all = Tensor::zeros(Shape{n, 3}, DType::f32, Device::cpu());
  c.all_gather(mine, all);
  const auto g = all.to_vector<float>();
  for (int k = 0; k < n; ++k) {
    CHECK(g[static_cast<size_t>(3 * k)] == float(k));
    CHECK(g[static_cast<size_t>(3 * k + 1)] == float(k) + 0.5f);
    CHECK(g[static_cast<size_t>(3 * k + 2)] == -float(k));
  }
  // reduce_scatter: rank r contributes in[k*2 + j] = (r + 1) * (k * 2 + j); chunk k sums to n(n+1)/2 * (2k + j).
  std::vector<double> in(static_cast<size_t>(2 * n));
  for (size_t i = 0; i < in.size(); ++i) in[i] = (r + 1) * static_cast<double>(i);
  Tensor out = Tensor::zeros(Shape{2}, DType::f64, Device::cpu());
  c.reduce_scatter(Tensor::from_vector(in, Shape{2 * n}), out);
  const double tri = n * (n + 1) / 2.0;
  CHECK(out.to_vector<double>() == std::vector<double>{tri * 2 * r, tri * (2 * r + 1)});
  CHECK_THROWS_WITH(c.all_gather(mine, Tensor::zeros(Shape{n * 3 + 1}, DType::f32, Device::cpu())),
                    Catch::Contains("all_gather"));
}

TEST_CASE("dist: all_to_all_v with uneven and empty counts", "[dist]") {
  dist::Communicator& c = comm();
  const int n = c.world(), r = c.rank();
  // Rank r sends (r + k) % 3 rows to rank k (some are 0); row j to k holds {r, k, j}.
  std::vector<int64_t> send(static_cast<size_t>(n));
  std::vector<int32_t> rows;
  for (int k = 0; k < n; ++k) {
    send[static_cast<size_t>(k)] = (r + k) % 3;
    for (int j = 0; j < (r + k) % 3; ++j) rows.insert(rows.end(), {r, k, j});
  }
  const std::vector<int64_t> recv = c.exchange_counts(send);
  int64_t total = 0;
  for (int k = 0; k < n; ++k) {
    CHECK(recv[static_cast<size_t>(k)] == (k + r) % 3);
    total += recv[static_cast<size_t>(k)];
  }
  const Tensor in = Tensor::from_vector(rows, Shape{static_cast<int64_t>(rows.size() / 3), 3});
  Tensor out = Tensor::zeros(Shape{total, 3}, DType::i32, Device::cpu());
  c.all_to_all_v(in, send, out, recv);
  const auto o = out.to_vector<int32_t>();
  size_t at = 0;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < (k + r) % 3; ++j, at += 3) CHECK(std::vector<int32_t>(o.begin() + at, o.begin() + at + 3) ==
                                                         std::vector<int32_t>{k, r, j});
  if (in.shape()[0] > 0)
    CHECK_THROWS_WITH(c.all_to_all_v(in, std::vector<int64_t>(static_cast<size_t>(n), 0), out, recv),
                      Catch::Contains("send counts add up to 0"));
  c.barrier();
}
