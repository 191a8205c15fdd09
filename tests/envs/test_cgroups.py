"""Where the sandbox cgroups go: parsing /proc/self/cgroup and mountinfo for cgroup v1, v2 and both.

The machine running the suite mounts one layout; these cases pin the others (the v2 controllers are
read from a ``cgroup.controllers`` file under a temporary mount point).
"""

from __future__ import annotations

from pathlib import Path

from agentworld.envs.cgroups import Hierarchy, parse_hierarchies


def _mount(point: Path | str, fstype: str, options: str, root: str = "/") -> str:
    escaped = str(point).replace(" ", "\\040")
    return f"30 25 0:26 {root} {escaped} rw,nosuid shared:9 - {fstype} {fstype} {options}"


def _v2(tmp_path: Path, own: str, controllers: str) -> Path:
    folder = tmp_path / own.lstrip("/")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cgroup.controllers").write_text(controllers + "\n")
    return folder


def test_v1_controllers_on_their_own_hierarchies() -> None:
    own = ["4:memory:/ci/job-7", "3:pids:/ci/job-7", "2:cpu,cpuacct:/ci/job-7"]
    mounts = [_mount("/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
              _mount("/sys/fs/cgroup/pids", "cgroup", "rw,pids"),
              _mount("/sys/fs/cgroup/cpu", "cgroup", "rw,cpu,cpuacct")]
    found, why = parse_hierarchies(own, mounts)
    assert found == {"memory": Hierarchy(1, Path("/sys/fs/cgroup/memory/ci/job-7")),
                     "pids": Hierarchy(1, Path("/sys/fs/cgroup/pids/ci/job-7"))}
    assert why == {}


def test_v2_unified_hierarchy_in_a_container_namespace(tmp_path: Path) -> None:
    point = tmp_path / "cgroup fs"
    folder = _v2(point, "/sub", "cpu io memory pids")
    found, why = parse_hierarchies(["0::/docker/abc/sub"], [_mount(point, "cgroup2", "rw,nsdelegate",
                                                                   root="/docker/abc")])
    assert found == {"memory": Hierarchy(2, folder), "pids": Hierarchy(2, folder)}
    assert why == {}


def test_v2_without_a_delegated_controller_says_why(tmp_path: Path) -> None:
    _v2(tmp_path, "/user.slice/u", "cpu pids")
    found, why = parse_hierarchies(["0::/user.slice/u"], [_mount(tmp_path, "cgroup2", "rw")])
    assert found == {"pids": Hierarchy(2, tmp_path / "user.slice/u")}
    assert why == {"memory": "no cgroup with the memory controller is mounted for this process"}


def test_hybrid_prefers_v1_for_a_controller_it_hosts(tmp_path: Path) -> None:
    folder = _v2(tmp_path, "/job", "memory pids")
    own = ["5:memory:/job", "0::/job"]
    mounts = [_mount("/sys/fs/cgroup/memory", "cgroup", "rw,memory"), _mount(tmp_path, "cgroup2", "rw")]
    found, _ = parse_hierarchies(own, mounts)
    assert found == {"memory": Hierarchy(1, Path("/sys/fs/cgroup/memory/job")), "pids": Hierarchy(2, folder)}


def test_own_cgroup_outside_the_mount_is_not_used(tmp_path: Path) -> None:
    own = ["4:memory:/elsewhere", "3:pids:/elsewhere"]
    mounts = [_mount("/m", "cgroup", "rw,memory", root="/ci"), _mount("/p", "cgroup", "rw,pids", root="/ci")]
    found, why = parse_hierarchies(own, mounts)
    assert found == {} and set(why) == {"memory", "pids"}
