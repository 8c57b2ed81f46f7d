"""A raw MCP server (no SDK) whose offer a test rewrites between runs: /probe/offer.json holds its
initialize result, its tools, prompts, resources and resource templates. Every line it receives is logged to
/workspace/output/received.log (when mounted rw)."""

from __future__ import annotations

import json
import sys

from rawio import logged, requests, send  # beside this script in /probe


def main() -> None:
    with open("/probe/offer.json", encoding="utf-8") as handle:
        offer = json.load(handle)
    for request_id, method, params in requests(logged(sys.stdin)):
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"), **offer["initialize"]}
        elif method == "tools/list":
            result = {"tools": offer["tools"]}
        elif method == "prompts/list":
            result = {"prompts": offer["prompts"]}
        elif method == "resources/list":
            result = {"resources": offer["resources"]}
        elif method == "resources/templates/list" and "resource_templates" not in offer:  # a server without them
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
            continue
        elif method == "resources/templates/list":
            result = {"resourceTemplates": offer["resource_templates"]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": f"called {params.get('name')}"}]}
        elif method == "prompts/get":
            result = {"messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}]}
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
