"""Latency of the Mem0-compatible surface next to the native API, against a running server, as a
Mem0 user sees it (the real `mem0ai` MemoryClient over HTTP, one thread, keep-alive).

    make run PORT=8107 &
    python manage.py create_api_key demo --name mem0-bench --mem0-compat > var/mem0_key.txt
    python -m bench.mem0_latency --host http://127.0.0.1:8107 --key-file var/mem0_key.txt

Stores 14 explicit memories (zh + en) for a fresh user, then times `search` (top_k 5) against
`POST /api/v1/recall` (k 5, no episodes) on the same queries, `get_all`, and inferred `add`s
(extraction runs in the request on the embedded profile). The user is forgotten at the end.
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("MEM0_TELEMETRY", "False")

FACTS = [f"{crop} is planted in field {n}." for n, crop in enumerate(
    ["Maize", "Soybean", "Wheat", "Rice", "Sorghum", "Millet", "Barley", "Oats", "Peanut", "Cotton"])] + [
    "我家的收割机是约翰迪尔S780。", "农场在黑龙江佳木斯。", "维保建议请按紧急程度排序。", "我喜欢简短的回答。"]
QUERIES = ["Which field has wheat?", "收割机是什么牌子？", "农场在哪里", "How should advice be ordered?"]


def timed(call, n: int) -> tuple[float, float]:
    samples = []
    for i in range(n):
        start = time.perf_counter()
        call(QUERIES[i % len(QUERIES)])
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.95) - 1)]


def main() -> None:
    import httpx
    from mem0 import MemoryClient

    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="http://127.0.0.1:8000")
    parser.add_argument("--key-file", required=True, help="a key created with create_api_key --mem0-compat")
    parser.add_argument("-n", type=int, default=40)
    args = parser.parse_args()
    key = open(args.key_file).read().strip()
    client = MemoryClient(api_key=key, host=args.host)
    user = f"bench-{int(time.time())}"
    client.add([{"role": "user", "content": fact} for fact in FACTS], user_id=user, infer=False)
    rest = httpx.Client(base_url=args.host, headers={"Authorization": f"Bearer {key}", "X-Memory-User": user})
    for query in QUERIES:  # warm-up
        client.search(query, filters={"user_id": user})
    rows = {
        "mem0 search": timed(lambda q: client.search(q, filters={"user_id": user}, top_k=5), args.n),
        "REST recall": timed(lambda q: rest.post("/api/v1/recall", json={"query": q, "k": 5, "include_episodes": False})
                             .raise_for_status(), args.n),
        "mem0 get_all": timed(lambda q: client.get_all(filters={"user_id": user}), args.n),
        "mem0 add (infer)": timed(lambda q: client.add(f"{q} 记住这个。", user_id=user), max(4, args.n // 3)),
    }
    client.delete_all(user_id=user)
    for name, (p50, p95) in rows.items():
        print(f"{name:18s} p50 {p50:6.1f} ms   p95 {p95:6.1f} ms")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
