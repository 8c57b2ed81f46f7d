"""The built-in catalog: well-known MCP servers, their tools and the least privilege each needs.

Versions are pins a person reviews; tool lists are those of the pinned release.
"""

from __future__ import annotations

from dataclasses import replace

from mcpspec.catalog.model import CatalogMount, CatalogTool, Credential, Effect, Entry, Package

_INPUT_RO = CatalogMount("workspace.input", "/workspace/input", "ro", "the project, read-only")
_OUTPUT_RW = CatalogMount("workspace.output", "/workspace/output", "rw", "what the server writes")
_TMP = CatalogMount("workspace.tmp", "/workspace/tmp", "rw", "scratch space (tmpfs)")

FILESYSTEM = Entry(
    name="filesystem",
    description="Read the project's files and write results to the output directory.",
    kind="filesystem",
    package=Package("npm", "@modelcontextprotocol/server-filesystem", "2026.8.31"),
    aliases=("mcp/filesystem",),
    command=("mcp-server-filesystem", "/workspace/input", "/workspace/output"),
    mounts=(_INPUT_RO, _OUTPUT_RW),
    tools=(
        CatalogTool("read_file", "Read a file (deprecated name of read_text_file).", ("reads_private",)),
        CatalogTool("read_text_file", "Read a text file.", ("reads_private",)),
        CatalogTool("read_media_file", "Read an image or audio file.", ("reads_private",)),
        CatalogTool("read_multiple_files", "Read several files at once.", ("reads_private",)),
        CatalogTool("write_file", "Create or overwrite a file.", ("writes_local",)),
        CatalogTool("edit_file", "Edit a file by line replacements.", ("writes_local",)),
        CatalogTool("create_directory", "Create a directory.", ("writes_local",)),
        CatalogTool("list_directory", "List a directory.", ("reads_private",)),
        CatalogTool("list_directory_with_sizes", "List a directory with file sizes.", ("reads_private",)),
        CatalogTool("directory_tree", "A recursive tree of a directory.", ("reads_private",)),
        CatalogTool("move_file", "Move or rename a file.", ("writes_local",)),
        CatalogTool("search_files", "Find files by name pattern.", ("reads_private",)),
        CatalogTool("get_file_info", "Size, times and permissions of a file.", ("reads_private",)),
        CatalogTool("list_allowed_directories", "The directories the server may touch.", ("none",)),
    ),
    review=("Mount only the project directory, read-only unless writes are needed; never the home directory.",),
)

GIT = Entry(
    name="git",
    description="Read the history and changes of the project's git repository.",
    kind="code-exec",
    package=Package("pypi", "mcp-server-git", "2026.10.19"),
    aliases=("mcp/git",),
    command=("mcp-server-git", "--repository", "/workspace/input"),
    mounts=(_INPUT_RO,),
    tools=(
        CatalogTool("git_status", "Working tree status.", ("reads_private",)),
        CatalogTool("git_diff_unstaged", "Changes not yet staged.", ("reads_private",)),
        CatalogTool("git_diff_staged", "Changes staged for commit.", ("reads_private",)),
        CatalogTool("git_diff", "Differences between branches or commits.", ("reads_private",)),
        CatalogTool("git_commit", "Record staged changes.", ("writes_local",), "per-session"),
        CatalogTool("git_add", "Stage files.", ("writes_local",)),
        CatalogTool("git_reset", "Unstage all staged changes.", ("writes_local",)),
        CatalogTool("git_log", "Commit history.", ("reads_private",)),
        CatalogTool("git_create_branch", "Create a branch.", ("writes_local",)),
        CatalogTool("git_checkout", "Switch branches.", ("writes_local",)),
        CatalogTool("git_show", "Contents of a commit.", ("reads_private",)),
        CatalogTool("git_branch", "List branches.", ("reads_private",)),
    ),
    review=(
        "The repository is mounted read-only, so commits fail: mount it rw only if the agent must commit, and then its .git hooks run on your machine.",
        "Never mount ~/.gitconfig, ~/.git-credentials or the SSH agent socket unless pushing is intended.",
    ),
)

_GITHUB_CREDENTIAL = Credential(
    secret="github-token",
    env="GITHUB_PERSONAL_ACCESS_TOKEN",
    description="Fine-grained GitHub token limited to the named repositories.",
    scopes=("contents:read", "issues:read", "pull_requests:read", "metadata:read"),
    ttl="30d",
    advice="A fine-grained token (github_pat_) for the named repositories only, read permissions, short expiry; never a classic token with 'repo'.",
)
_UNTRUSTED_READ: tuple[Effect, ...] = ("reads_private", "reads_untrusted")

GITHUB = Entry(
    name="github",
    description="Read issues, pull requests and files of named GitHub repositories (GitHub's server, read-only).",
    kind="other",
    package=Package("oci", "ghcr.io/github/github-mcp-server", "v0.30.3"),
    aliases=("github/github-mcp-server",),
    urls=("https://api.githubcopilot.com/mcp",),
    command=("github-mcp-server", "stdio", "--read-only", "--toolsets", "repos,issues,pull_requests,users"),
    egress=("api.github.com:443",),
    credential=_GITHUB_CREDENTIAL,
    tools=(
        CatalogTool("get_me", "The authenticated user.", ("reads_private",)),
        CatalogTool("search_repositories", "Search repositories.", ("reads_untrusted",)),
        CatalogTool("get_file_contents", "Read a file or directory of a repository.", _UNTRUSTED_READ),
        CatalogTool("list_commits", "Commits of a branch.", ("reads_private",)),
        CatalogTool("get_commit", "One commit with its diff.", _UNTRUSTED_READ),
        CatalogTool("list_branches", "Branches of a repository.", ("reads_private",)),
        CatalogTool("list_tags", "Tags of a repository.", ("reads_private",)),
        CatalogTool("get_tag", "One tag.", ("reads_private",)),
        CatalogTool("list_releases", "Releases of a repository.", _UNTRUSTED_READ),
        CatalogTool("get_latest_release", "The latest release.", _UNTRUSTED_READ),
        CatalogTool("get_release_by_tag", "The release of a tag.", _UNTRUSTED_READ),
        CatalogTool("search_code", "Search code.", _UNTRUSTED_READ),
        CatalogTool("list_issues", "Issues of a repository.", _UNTRUSTED_READ),
        CatalogTool("issue_read", "One issue, its comments, labels or sub-issues.", _UNTRUSTED_READ),
        CatalogTool("search_issues", "Search issues.", _UNTRUSTED_READ),
        CatalogTool("list_issue_types", "Issue types of an organisation.", ("reads_private",)),
        CatalogTool("get_label", "One label.", ("reads_private",)),
        CatalogTool("list_pull_requests", "Pull requests of a repository.", _UNTRUSTED_READ),
        CatalogTool("pull_request_read", "One pull request, its diff, files, status, comments or reviews.", _UNTRUSTED_READ),
        CatalogTool("search_pull_requests", "Search pull requests.", _UNTRUSTED_READ),
        CatalogTool("search_users", "Search users.", ("reads_untrusted",)),
    ),
    review=(
        "--read-only: the server offers no write tool. To let the agent comment or open pull requests, drop it, list those tools with approval: always and give the token write permission on the named repositories only.",
        "With public repositories in reach, issues and pull requests are untrusted input: add --lockdown-mode.",
        "Egress allows the API only; raw.githubusercontent.com is a host anyone can write to, so allowing it opens a way out (NW004, GR001).",
    ),
)

GITHUB_REFERENCE = Entry(
    name="github-reference",
    description="Read issues, pull requests and files of named GitHub repositories (the archived reference server).",
    kind="other",
    package=Package("npm", "@modelcontextprotocol/server-github", "2025.4.8"),
    aliases=("mcp/github",),
    command=("mcp-server-github",),
    egress=("api.github.com:443",),
    credential=replace(_GITHUB_CREDENTIAL, secret="github-reference-token"),
    tools=(
        CatalogTool("search_repositories", "Search repositories.", ("reads_untrusted",)),
        CatalogTool("get_file_contents", "Read a file or directory of a repository.", ("reads_private", "reads_untrusted")),
        CatalogTool("list_commits", "Commits of a branch.", ("reads_private",)),
        CatalogTool("list_issues", "Issues of a repository.", ("reads_private", "reads_untrusted")),
        CatalogTool("get_issue", "One issue.", ("reads_private", "reads_untrusted")),
        CatalogTool("search_issues", "Search issues and pull requests.", ("reads_private", "reads_untrusted")),
        CatalogTool("search_code", "Search code.", ("reads_private", "reads_untrusted")),
        CatalogTool("search_users", "Search users.", ("reads_untrusted",)),
        CatalogTool("list_pull_requests", "Pull requests of a repository.", ("reads_private", "reads_untrusted")),
        CatalogTool("get_pull_request", "One pull request.", ("reads_private", "reads_untrusted")),
        CatalogTool("get_pull_request_files", "Files a pull request changes.", ("reads_private", "reads_untrusted")),
        CatalogTool("get_pull_request_status", "Check status of a pull request.", ("reads_private",)),
        CatalogTool("get_pull_request_comments", "Review comments of a pull request.", ("reads_private", "reads_untrusted")),
        CatalogTool("get_pull_request_reviews", "Reviews of a pull request.", ("reads_private", "reads_untrusted")),
        CatalogTool("create_issue", "Open an issue.", ("external_send",), "always"),
        CatalogTool("add_issue_comment", "Comment on an issue.", ("external_send",), "always"),
        CatalogTool("update_issue", "Edit an issue.", ("external_send",), "always"),
        CatalogTool("create_pull_request", "Open a pull request.", ("external_send",), "always"),
        CatalogTool("create_pull_request_review", "Review a pull request.", ("external_send",), "always"),
        CatalogTool("create_branch", "Create a branch.", ("external_send",), "always"),
        CatalogTool("create_or_update_file", "Commit one file to a branch.", ("external_send",), "always"),
        CatalogTool("push_files", "Commit several files to a branch.", ("external_send",), "always"),
        CatalogTool("update_pull_request_branch", "Update a pull request's branch from its base.", ("external_send",), "always"),
        CatalogTool("merge_pull_request", "Merge a pull request.", ("deploy", "external_send"), "always"),
        CatalogTool("create_repository", "Create a repository.", ("modify_access",), "always"),
        CatalogTool("fork_repository", "Fork a repository.", ("external_send",), "always"),
    ),
    review=(
        "The reference server is archived: GitHub's own server (catalog name github) is maintained and has a read-only mode.",
        "Drop the write tools the agent does not need; with public repositories in reach, issues are untrusted input.",
    ),
    archived=True,
    successor="github",
)

FETCH = Entry(
    name="fetch",
    description="Fetch web pages as markdown.",
    kind="search",
    package=Package("pypi", "mcp-server-fetch", "2026.10.24"),
    aliases=("mcp/fetch",),
    command=("mcp-server-fetch",),
    tools=(CatalogTool("fetch", "Fetch a URL and return it as markdown.", ("reads_untrusted", "external_send"), "always"),),
    review=(
        "Egress is denied: list the sites the agent may read. Open egress turns every fetch into a way to send data out (the URL carries it).",
    ),
)

POSTGRES = Entry(
    name="postgres",
    description="Run read-only SQL queries against one Postgres database.",
    kind="data",
    package=Package("npm", "@modelcontextprotocol/server-postgres", "0.6.2"),
    aliases=("mcp/postgres",),
    command=("mcp-server-postgres", "postgresql://mcp_readonly@db.acme.example:5432/app"),
    egress=("db.acme.example:5432",),
    credential=Credential(
        secret="postgres-readonly",
        env="PGPASSWORD",
        description="Password of a role that may only SELECT from the schemas the agent needs.",
        scopes="none",
        ttl="none",
        advice="A dedicated role with SELECT on named schemas, default_transaction_read_only=on and a statement timeout; the password through PGPASSWORD, never in the URL.",
    ),
    tools=(CatalogTool("query", "Run a read-only SQL query.", ("reads_private",)),),
    review=(
        "Replace the database host, port, role and name in the command and in egress.",
        "The reference server is archived and its read-only mode is only a transaction wrapper: the role's grants are the real limit.",
    ),
    archived=True,
)

PLAYWRIGHT = Entry(
    name="playwright",
    description="Drive a headless browser through accessibility snapshots.",
    kind="browser",
    package=Package("npm", "@playwright/mcp", "0.0.83"),
    aliases=("mcr.microsoft.com/playwright/mcp",),
    command=("mcp-server-playwright", "--headless", "--isolated", "--output-dir", "/workspace/output"),
    mounts=(_OUTPUT_RW, _TMP),
    tools=(
        CatalogTool("browser_navigate", "Open a URL.", ("reads_untrusted", "external_send"), "always"),
        CatalogTool("browser_navigate_back", "Go back.", ("reads_untrusted",)),
        CatalogTool("browser_snapshot", "Accessibility snapshot of the page.", ("reads_untrusted",)),
        CatalogTool("browser_click", "Click an element.", ("reads_untrusted", "external_send"), "always"),
        CatalogTool("browser_type", "Type into an element.", ("external_send",), "always"),
        CatalogTool("browser_fill_form", "Fill several form fields.", ("external_send",), "always"),
        CatalogTool("browser_select_option", "Select an option.", ("external_send",), "always"),
        CatalogTool("browser_hover", "Hover over an element.", ("reads_untrusted",)),
        CatalogTool("browser_drag", "Drag and drop.", ("reads_untrusted",)),
        CatalogTool("browser_press_key", "Press a key.", ("external_send",), "always"),
        CatalogTool("browser_wait_for", "Wait for text or time.", ("reads_untrusted",)),
        CatalogTool("browser_take_screenshot", "Screenshot of the page.", ("reads_untrusted", "writes_local")),
        CatalogTool("browser_tabs", "List, open, close or select tabs.", ("reads_untrusted",)),
        CatalogTool("browser_console_messages", "Console messages of the page.", ("reads_untrusted",)),
        CatalogTool("browser_network_requests", "Requests the page made.", ("reads_untrusted",)),
        CatalogTool("browser_handle_dialog", "Accept or dismiss a dialog.", ("reads_untrusted",)),
        CatalogTool("browser_resize", "Resize the window.", ("none",)),
        CatalogTool("browser_close", "Close the page.", ("none",)),
    ),
    review=(
        "Egress is denied: list the origins the browser may open (and pass them as --allowed-origins).",
        "browser_evaluate (arbitrary JavaScript) and browser_file_upload are not listed, so they stay hidden.",
        "Keep --isolated: the default persistent profile keeps logged-in state between runs.",
    ),
)

PUPPETEER = Entry(
    name="puppeteer",
    description="Drive a headless Chromium with Puppeteer.",
    kind="browser",
    package=Package("npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12"),
    aliases=("mcp/puppeteer",),
    command=("mcp-server-puppeteer",),
    tools=(
        CatalogTool("puppeteer_navigate", "Open a URL.", ("reads_untrusted", "external_send"), "always"),
        CatalogTool("puppeteer_screenshot", "Screenshot of the page or an element.", ("reads_untrusted",)),
        CatalogTool("puppeteer_click", "Click an element.", ("reads_untrusted", "external_send"), "always"),
        CatalogTool("puppeteer_fill", "Fill an input.", ("external_send",), "always"),
        CatalogTool("puppeteer_select", "Select an option.", ("external_send",), "always"),
        CatalogTool("puppeteer_hover", "Hover over an element.", ("reads_untrusted",)),
    ),
    review=(
        "Egress is denied: list the origins the browser may open; never set ALLOW_DANGEROUS.",
        "puppeteer_evaluate (arbitrary JavaScript) is not listed, so it stays hidden. The server is archived: prefer playwright.",
    ),
    archived=True,
    successor="playwright",
)

SLACK = Entry(
    name="slack",
    description="Read the history of named Slack channels.",
    kind="other",
    package=Package("npm", "@modelcontextprotocol/server-slack", "2025.4.25"),
    aliases=("mcp/slack",),
    command=("mcp-server-slack",),
    egress=("slack.com:443",),
    credential=Credential(
        secret="slack-bot-token",
        env="SLACK_BOT_TOKEN",
        description="Slack bot token (xoxb-) with read scopes only.",
        scopes=("channels:history", "channels:read", "users:read", "users.profile:read"),
        ttl="none",
        advice="A bot token (xoxb-), never a user token (xoxp-); add chat:write only if the agent must post; restrict SLACK_CHANNEL_IDS.",
    ),
    tools=(
        CatalogTool("slack_list_channels", "List public channels.", ("reads_private",)),
        CatalogTool("slack_get_channel_history", "Recent messages of a channel.", ("reads_private", "reads_untrusted")),
        CatalogTool("slack_get_thread_replies", "Replies in a thread.", ("reads_private", "reads_untrusted")),
        CatalogTool("slack_get_users", "List users.", ("reads_private",)),
        CatalogTool("slack_get_user_profile", "A user's profile.", ("reads_private",)),
        CatalogTool("slack_post_message", "Post a message.", ("external_send",), "always"),
        CatalogTool("slack_reply_to_thread", "Reply in a thread.", ("external_send",), "always"),
        CatalogTool("slack_add_reaction", "Add a reaction.", ("external_send",), "always"),
    ),
    review=(
        "Set SLACK_TEAM_ID and SLACK_CHANNEL_IDS to your workspace and the channels the agent may read.",
        "Posting tools need chat:write and reactions:write; links in posted messages unfurl, which sends data out.",
    ),
    archived=True,
)

MEMORY = Entry(
    name="memory",
    description="A knowledge graph the agent keeps between tasks, in one file.",
    kind="memory",
    package=Package("npm", "@modelcontextprotocol/server-memory", "2026.8.31"),
    aliases=("mcp/memory",),
    command=("mcp-server-memory",),
    mounts=(_OUTPUT_RW,),
    tools=(
        CatalogTool("create_entities", "Add entities.", ("writes_local",)),
        CatalogTool("create_relations", "Add relations.", ("writes_local",)),
        CatalogTool("add_observations", "Add observations to entities.", ("writes_local",)),
        CatalogTool("delete_entities", "Delete entities.", ("writes_local", "destructive"), "always"),
        CatalogTool("delete_observations", "Delete observations.", ("writes_local", "destructive"), "always"),
        CatalogTool("delete_relations", "Delete relations.", ("writes_local", "destructive"), "always"),
        CatalogTool("read_graph", "The whole graph.", ("reads_private",)),
        CatalogTool("search_nodes", "Search the graph.", ("reads_private",)),
        CatalogTool("open_nodes", "Named nodes of the graph.", ("reads_private",)),
    ),
    review=("What earlier tasks stored can carry instructions into later ones: the workspace is reset per task unless you keep the memory file.",),
)

ENTRIES: tuple[Entry, ...] = (FILESYSTEM, GIT, GITHUB, GITHUB_REFERENCE, FETCH, POSTGRES, PLAYWRIGHT, PUPPETEER, SLACK, MEMORY)
