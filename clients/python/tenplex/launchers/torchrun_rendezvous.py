"""The ``tenplex`` rendezvous backend of torchrun (torch 2.x): the daemon decides which nodes form each round.

    torchrun --nnodes 1:4 --nproc-per-node 2 --rdzv-backend tenplex --rdzv-endpoint 127.0.0.1:20010 \\
        --rdzv-id JOB train.py

The installed ``tenplex`` distribution registers it under torch's ``torchrun.handlers`` entry point. Each
torchrun agent is a node of the job ``JOB`` (the rendezvous id) on the daemon at the endpoint (docs/API.md,
``/api/v1/jobs/<job>/rendezvous``). A round forms from the nodes that joined; node 0 of the round hosts its
store (a ``TCPStore`` the agents and, as torch's own c10d rendezvous does, the workers use). When a node
joins a running round, or the daemon is told the job has another number of nodes, the daemon first makes
the job's ranks save (the ``tenplex.should_stop``/``save`` calls of an elastic script) and moves their state
to the next round's layout, and only then asks the agents to restart their workers, which ``tenplex.load``
it. A script without those calls is restarted at once, as under torch's own rendezvous. Nodes beyond what
the job may have wait (standby) until it may have more, or until it ends (then they exit with status 0).

The agent passes each round to its workers in their environment: ``TENPLEX_ADDR`` (the node's daemon:
``--rdzv-conf daemon=HOST:PORT``, else ``TENPLEX_ADDR``, else the endpoint), ``TENPLEX_JOB``, ``TENPLEX_TP``,
``TENPLEX_PP``, ``TENPLEX_DP`` and ``TENPLEX_CONFIG`` (the round's configuration), ``TENPLEX_DAEMONS`` when the round spans
several daemons, and ``TENPLEX_RDZV_ADDR``, ``TENPLEX_RDZV_ROUND``.

``--rdzv-conf`` keys: ``daemon``; ``last_call_timeout`` (seconds a round waits for more nodes once it has
``--nnodes``' minimum, default 1); ``keep_alive`` (seconds after which a node not heard from is dropped,
default 15); ``join_timeout`` (seconds a node waits for a round, default 600; standby nodes wait without
limit); ``poll`` (seconds between the agent's questions whether to restart, default 0.5); ``nproc`` (the node's processes, when it is not torchrun's ``--nproc-per-node``)."""

import json
import os
import socket
import sys
import threading
import time
import uuid

from ..errors import TenplexError
from ..rank_env import job_name
from ..wire import routes
from ..wire.http_client import Client


def handler_creator():
    """The entry point torch loads (``torchrun.handlers``): it answers the function that makes a handler."""
    return create_handler


def create_handler(params):
    """A rendezvous handler for torch's ``RendezvousParameters``."""
    return _handler_class()(params)


def _node_id():
    host = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in socket.gethostname())[:64] or "node"
    return "%s_%d_%s" % (host, os.getpid(), uuid.uuid4().hex[:8])


def _host_port(endpoint, default_port=20010):
    """``host:port`` of an endpoint given as ``host``, ``host:port`` or a URL."""
    e = (endpoint or "").strip()
    if "://" in e:
        e = e.split("://", 1)[1]
    e = e.split("/", 1)[0]
    if not e:
        raise ValueError("the tenplex rendezvous needs --rdzv-endpoint HOST:PORT (the daemon)")
    return e if ":" in e.rsplit("]", 1)[-1] else "%s:%d" % (e, default_port)


def _route_addr(host_port):
    """The address this host reaches ``host_port`` from (where its store is reachable for the others)."""
    host, port = host_port.rsplit(":", 1)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host.strip("[]"), int(port)))
            return s.getsockname()[0]
    except OSError:
        return socket.getfqdn()


def _nproc(params):
    """The node's processes: ``--rdzv-conf nproc=N``, else torchrun's ``--nproc-per-node`` as it reads it."""
    given = params.get("nproc")
    if given is not None:
        return int(given)
    from torch.distributed import run
    try:
        args = run.get_args_parser().parse_args(sys.argv[1:])
        return int(run.determine_local_world_size(args.nproc_per_node))
    except (SystemExit, ValueError, AttributeError) as e:
        raise ValueError("the tenplex rendezvous cannot tell this node's processes from the command line (%s); "
                         "give --rdzv-conf nproc=N" % e) from None


def _handler_class():
    from torch.distributed.elastic.rendezvous import RendezvousHandler

    class TenplexRendezvousHandler(_Rounds, RendezvousHandler):
        pass

    return TenplexRendezvousHandler


class _Rounds:
    """The handler's work; the class torch sees adds torch's ``RendezvousHandler`` as a base."""

    def __init__(self, params):
        self._job = job_name(params.run_id)
        self._endpoint = _host_port(params.endpoint)
        daemon = params.get("daemon") or os.environ.get("TENPLEX_ADDR") or self._endpoint
        self._daemon = _host_port(daemon)
        # https where the daemons serve TLS (docs/API.md, "TLS and tokens"): given as https:// URLs
        self._scheme = "https" if (params.endpoint or "").startswith("https://") else "http"
        self._daemon_scheme = "https" if str(daemon).startswith("https://") else self._scheme
        self._addr = params.local_addr or _route_addr(self._endpoint)
        self._min, self._max = int(params.min_nodes), int(params.max_nodes)
        self._nproc = _nproc(params)
        self._last_call = float(params.get("last_call_timeout", 1))
        self._keep_alive = float(params.get("keep_alive", 15))
        self._join_timeout = float(params.get("join_timeout", 600))
        self._poll = float(params.get("poll", 0.5))
        self._waiting = (0.0, 0)  # when num_nodes_waiting last asked the daemon, and its answer
        self._node = _node_id()
        self._secret = None  # the first join answers it; the node's later calls carry it
        self._client = Client("%s://%s" % (self._scheme, self._endpoint), timeout=30)
        self._unheard = 0.0  # when the daemon last failed to answer num_nodes_waiting (0: it answers)
        self._lock = threading.Lock()
        self._round = 0
        self._closed = False
        self._server = None  # the store this node hosts for its round (node 0)
        self._beats = threading.Thread(target=self._heartbeat, name="tenplex-rdzv-heartbeat", daemon=True)
        self._beats.start()

    # ------------------------------------------------------------ the daemon

    def _ask(self, method, what="", body=None, brief=True):
        """A request of this node; a GET is ``brief`` (no members, configuration or events) unless told."""
        with self._lock:  # one requests session, shared with the heartbeat thread
            if method == "GET":
                params = {"node": self._node}
                if brief:
                    params["brief"] = "true"
                if self._secret:
                    params["secret"] = self._secret
                return self._client.request("GET", routes.rendezvous_route(self._job), params=params).json()
            body = dict(body or {})
            if self._secret and "node" in body:
                body["secret"] = self._secret
            st = self._client.request("POST", routes.rendezvous_route(self._job, what), json=body).json()
            self._secret = st.get("secret") or self._secret
            return st

    def _heartbeat(self):
        while not self._closed:
            time.sleep(max(0.5, self._keep_alive / 5))
            try:
                self._ask("GET")
            except Exception:  # noqa: BLE001 - the next call says why, where someone waits for it
                pass

    # ------------------------------------------------------------ RendezvousHandler

    def get_backend(self):
        return "tenplex"

    @property
    def use_agent_store(self):
        return True

    def get_run_id(self):
        return self._job

    def is_closed(self):
        try:
            return self._ask("GET")["state"] == "closed"
        except TenplexError:
            return self._closed

    def set_closed(self):
        self._ask("POST", "close", {"node": self._node})

    def num_nodes_waiting(self):
        """Above 0 when the daemon wants the round's workers restarted; asked at most every ``poll`` seconds
        (torchrun asks every ``--monitor-interval``, 0.1 s). A daemon that does not answer leaves the workers
        running (said once a minute on stderr): the round goes on, and the daemon drops this node if it
        stays silent past the keep-alive."""
        if time.monotonic() - self._waiting[0] < self._poll:
            return self._waiting[1]
        try:
            n = int(self._ask("GET").get("waiting", 0))
            self._unheard = 0.0
            self._waiting = (time.monotonic(), n)
            return n
        except TenplexError as e:
            if time.monotonic() - self._unheard > 60:
                self._unheard = time.monotonic()
                sys.stderr.write("tenplex rendezvous: job %s: the daemon does not answer (%s); the workers go on\n"
                                 % (self._job, e))
            return 0

    def shutdown(self):
        self._closed = True
        try:
            self._ask("POST", "close", {"node": self._node})
            return True
        except TenplexError as e:
            sys.stderr.write("tenplex rendezvous: could not close job %s's rendezvous: %s\n" % (self._job, e))
            return False

    def next_rendezvous(self):
        st = self._ask("POST", "join", {"node": self._node, "nproc": self._nproc, "daemon": self._daemon,
                                        "minNodes": self._min, "maxNodes": self._max,
                                        "lastCallSeconds": self._last_call, "keepAliveSeconds": self._keep_alive})
        want = st["asked"]
        while True:
            self._await_round(st, want)
            st = self._ask("GET", brief=False)  # the members and configuration, once
            if st["round"] >= want and st["rank"] >= 0 and st.get("store"):
                self._waiting = (0.0, 0)
                return self._info(st)

    def _await_round(self, st, want):
        """Polls until this node is in round ``want`` or later and the round's store is known; node 0
        hosts the store meanwhile. A standby node waits without limit, others ``join_timeout``."""
        from torch.distributed.elastic.rendezvous import RendezvousTimeoutError

        end = time.monotonic() + self._join_timeout
        said = None
        while not (st["round"] >= want and st["rank"] >= 0 and st.get("store")):
            self._end_if_closed(st)
            if st["round"] >= want and st["rank"] >= 0 and st["rank"] == 0 and not st.get("store"):
                st = self._host_store(st)
                continue
            if st.get("standby"):
                end = time.monotonic() + self._join_timeout
            if said != (st["state"], st.get("standby")):
                said = (st["state"], st.get("standby"))
                self._say_waiting(st)
            if time.monotonic() > end:
                raise RendezvousTimeoutError("no round of job %s took node %s within %.0f s (--rdzv-conf "
                                             "join_timeout): %s" % (self._job, self._node, self._join_timeout, st))
            time.sleep(0.1)
            st = self._ask("GET")

    # ------------------------------------------------------------ a round

    def _end_if_closed(self, st):
        if st["state"] == "closed":
            sys.stderr.write("tenplex rendezvous: job %s ended while node %s waited for a round; this node exits\n"
                             % (self._job, self._node))
            self._closed = True
            raise SystemExit(0)

    def _say_waiting(self, st):
        what = ("standby: job %s has the %d node(s) it may have now" % (self._job, st["target"]) if st.get("standby")
                else "job %s: %s (round %d)" % (self._job, st["state"], st["round"]))
        sys.stderr.write("tenplex rendezvous: node %s waits, %s\n" % (self._node, what))
        sys.stderr.flush()

    def _host_store(self, st):
        """Node 0 of a round: a new store for it, published to the daemon."""
        from torch import distributed as dist
        from ..c10d import tcp_store

        server = tcp_store(dist, self._addr, 0, None, True, wait_for_workers=False)
        self._server = server
        return self._ask("POST", "store", {"node": self._node, "round": st["round"],
                                           "address": "%s:%d" % (self._addr, server.port)})

    def _info(self, st):
        from datetime import timedelta
        from torch import distributed as dist
        from torch.distributed.elastic.rendezvous import RendezvousInfo, RendezvousStoreInfo
        from ..c10d import tcp_store

        host, port = st["store"].rsplit(":", 1)
        if st["rank"] == 0 and self._server is not None:
            base = self._server
        else:
            base = tcp_store(dist, host, int(port), None, False, timeout=timedelta(seconds=300))
            self._server = None  # a store this node hosted for an earlier round is no longer needed
        self._round = st["round"]
        self._environ(st)
        store = dist.PrefixStore("tenplex/%s/%d/" % (self._job, st["round"]), base)
        return RendezvousInfo(store, st["rank"], len(st["members"]), RendezvousStoreInfo(host, int(port)))

    def _environ(self, st):
        """What the workers of this round read (they inherit the agent's environment)."""
        config = st.get("config") or {}
        daemons = []
        for m in st["members"]:
            if m["daemon"] not in daemons:
                daemons.append(m["daemon"])
        env = {"TENPLEX_ADDR": "%s://%s" % (self._daemon_scheme, self._daemon), "TENPLEX_JOB": self._job,
               "TENPLEX_TP": str(config.get("tp", 1)), "TENPLEX_PP": str(config.get("pp", 1)),
               "TENPLEX_DP": str(config.get("dp", st["world"])), "TENPLEX_RDZV_ADDR": "%s://%s" % (self._scheme, self._endpoint),
               "TENPLEX_RDZV_ROUND": str(st["round"]), "TENPLEX_CONFIG": json.dumps(config)}
        os.environ.update(env)
        if len(daemons) > 1:
            os.environ["TENPLEX_DAEMONS"] = json.dumps({str(i): d for i, d in enumerate(daemons)})
        else:
            os.environ.pop("TENPLEX_DAEMONS", None)
        sys.stderr.write("tenplex rendezvous: job %s round %d: node %s is %d of %d, world %d, (T,P,D)=(%s,%s,%s)\n"
                         % (self._job, st["round"], self._node, st["rank"], len(st["members"]), st["world"],
                            env["TENPLEX_TP"], env["TENPLEX_PP"], env["TENPLEX_DP"]))
        sys.stderr.flush()
