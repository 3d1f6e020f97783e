"""The SQL views that show stored measurements to other tools (docs/store.md): Grafana's SQL
data sources, Datasette, pandas ``read_sql``, ``sqlite3`` and ``psql`` at a prompt.

- ``measurements``: every measurement of every run, one row each: ``run_id``, ``started_at``,
  ``host``, ``benchmark``, ``metric``, ``value``, ``unit`` and ``params`` (a JSON object: JSON1
  text on SQLite, ``jsonb`` on PostgreSQL), unpacked in SQL from both pack formats
  (store/packs.py); ``seq`` orders a run's rows as they were stored.
- ``headline_measurements``: the headline series only (``families.headline``), one row per host a
  value belongs to, from the indexed ``headlines`` table written with each run: what a dashboard
  over a fleet's history asks for.

On PostgreSQL a NUL character in a measurement's text (which a run keeps, escaped, in its JSON:
store/nul.py) reads as U+FFFD: ``jsonb`` holds none.

``host`` is the measurement's ``host`` param, else the run's ``node`` tag, else the run's host
(several, comma-joined, for a result that spans them), as ``trend`` names a series' host.

A ``table`` pack's rows are text as the tool printed them: split into lines and, at runs of
spaces, into tokens; a value token is a number where it is a JSON number after a trailing ``*``
or ``,`` (``packs.storable`` stores every other table as a rows pack, so SQL reads exactly the
records Python reads). Its params are the row's leading values, the column's params and the
table's constants, merged (later ones win, as ``packs._table`` merges them).

Each view is (re)made by a migration; its SQL here changes only with a new migration that makes
it again, so that a database says by its schema which views it has.
"""

from __future__ import annotations

from clusterbench.store.backend import Backend
from clusterbench.store.packs import MAX_SPACES

# How many times two spaces become one: enough for any run of up to MAX_SPACES spaces.
_HALVINGS = MAX_SPACES.bit_length()


def _squeezed(expr: str) -> str:
    """SQLite: ``expr`` with every run of spaces one space and no space next to a line feed."""
    for _ in range(_HALVINGS):
        expr = f"replace({expr}, '  ', ' ')"
    return f"trim(replace(replace({expr}, char(10) || ' ', char(10)), ' ' || char(10), char(10)), ' ' || char(10))"


def _sqlite_measurements() -> str:
    rows_text = _squeezed("substr(p.body, instr(p.body, char(10)) + 1)")
    value_token = "rtrim(tok.value, '*,')"
    return f"""
CREATE VIEW measurements AS
WITH packed AS (
    SELECT p.run_id, p.id AS pack, CAST(r.key AS INTEGER) AS seq,
           json_extract(p.body, '$.k[' || (r.value ->> 0) || '][0]') AS benchmark,
           json_extract(p.body, '$.k[' || (r.value ->> 0) || '][1]') AS metric,
           r.value ->> 2 AS value,
           json_extract(p.body, '$.k[' || (r.value ->> 0) || '][2]') AS unit,
           json_extract(p.body, '$.p[' || (r.value ->> 1) || ']') AS params
    FROM measurement_packs p, json_each(p.body, '$.r') r
    WHERE p.format = 'rows'),
tables AS (
    SELECT p.run_id, p.id AS pack, substr(p.body, 1, instr(p.body, char(10)) - 1) AS head,
           '[["' || replace(replace({rows_text}, ' ', '","'), char(10), '"],["') || '"]]' AS lines
    FROM measurement_packs p WHERE p.format = 'table'),
table_lines AS (
    SELECT t.run_id, t.pack, t.head, line.key AS line, line.value AS tokens,
           json_array_length(t.head, '$.lead') AS nlead,
           (SELECT json_group_object(ld.value ->> 0, CASE ld.value ->> 1 WHEN 'int' THEN CAST(tok.value AS INTEGER)
                                                      ELSE tok.value END)
              FROM json_each(t.head, '$.lead') ld JOIN json_each(line.value) tok ON tok.key = ld.key) AS lead
    FROM tables t, json_each(t.lines) line),
tabled AS (
    SELECT l.run_id, l.pack, l.line * 1000000 + tok.key AS seq, l.head ->> '$.benchmark' AS benchmark,
           c.value ->> 0 AS metric,
           CAST({value_token} ->> '$' AS REAL) AS value,
           c.value ->> 1 AS unit,
           json_patch(json_patch(l.lead, c.value -> 2), l.head -> '$.const') AS params
    FROM table_lines l, json_each(l.tokens) tok, json_each(l.head, '$.cols') c
    WHERE tok.key >= l.nlead AND c.key = tok.key - l.nlead AND c.type = 'array'
      AND json_valid({value_token}) AND json_type({value_token}) IN ('integer', 'real')),
everything AS (SELECT * FROM packed UNION ALL SELECT * FROM tabled)
SELECT m.run_id, r.started_at,
       COALESCE(CAST(json_extract(m.params, '$.host') AS TEXT),
                (SELECT t.value FROM run_tags t WHERE t.run_id = m.run_id AND t.key = 'node'),
                (SELECT group_concat(h.value, ',') FROM json_each(r.hosts) h)) AS host,
       m.benchmark, m.metric, m.value, m.unit, m.params, m.pack, m.seq
FROM everything m JOIN runs r ON r.id = m.run_id
"""


def _postgres_measurements() -> str:
    value_token = "rtrim(l.toks[t.nlead + c.ci], '*,')"
    # (no question mark: the backend takes each for a placeholder). OFFSET 0 keeps each pack's body
    # parsed once: without it PostgreSQL inlines the subquery and parses the whole body again for
    # every reference in every record (a 30 KB pack, 418 records, 4 references: 14 minutes for 1k
    # runs' count(*), BENCHMARKS.md "Fleet scale")
    return rf"""
CREATE VIEW measurements AS
WITH packed AS (
    SELECT p.run_id, p.id AS pack, (r.seq - 1)::bigint AS seq,
           d.doc -> 'k' -> ((r.rec ->> 0)::int) ->> 0 AS benchmark,
           d.doc -> 'k' -> ((r.rec ->> 0)::int) ->> 1 AS metric,
           (r.rec ->> 2)::double precision AS value,
           d.doc -> 'k' -> ((r.rec ->> 0)::int) ->> 2 AS unit,
           d.doc -> 'p' -> ((r.rec ->> 1)::int) AS params
    FROM measurement_packs p
    CROSS JOIN LATERAL (SELECT replace(p.body, '\u0000', '\ufffd')::jsonb AS doc OFFSET 0) d
    CROSS JOIN LATERAL jsonb_array_elements(d.doc -> 'r') WITH ORDINALITY AS r(rec, seq)
    WHERE p.format = 'rows'),
tabled AS (
    SELECT p.run_id, p.id AS pack, (l.n - 1) * 1000000 + t.nlead + c.ci - 1 AS seq, t.head ->> 'benchmark' AS benchmark,
           c.col ->> 0 AS metric,
           CASE WHEN {value_token} ~ '^-{{0,1}}(0|[1-9][0-9]*)(\.[0-9]+){{0,1}}([eE][-+]{{0,1}}[0-9]+){{0,1}}$'
                THEN {value_token}::double precision END AS value,
           c.col ->> 1 AS unit,
           COALESCE((SELECT jsonb_object_agg(ld.x ->> 0, CASE ld.x ->> 1 WHEN 'int' THEN to_jsonb(l.toks[ld.i]::bigint)
                                                          ELSE to_jsonb(l.toks[ld.i]) END)
                       FROM jsonb_array_elements(t.head -> 'lead') WITH ORDINALITY ld(x, i)
                      WHERE ld.i <= cardinality(l.toks)), '{{}}'::jsonb)
             || (c.col -> 2) || (t.head -> 'const') AS params
    FROM measurement_packs p
    CROSS JOIN LATERAL (SELECT split_part(p.body, E'\n', 1)::jsonb AS head OFFSET 0) h
    CROSS JOIN LATERAL (SELECT h.head, jsonb_array_length(h.head -> 'lead') AS nlead) t
    CROSS JOIN LATERAL (SELECT regexp_split_to_array(btrim(u.line), ' +') AS toks, u.n
                          FROM unnest(string_to_array(substr(p.body, strpos(p.body, E'\n') + 1), E'\n'))
                               WITH ORDINALITY u(line, n)
                         WHERE btrim(u.line) <> '') l
    CROSS JOIN LATERAL jsonb_array_elements(t.head -> 'cols') WITH ORDINALITY c(col, ci)
    WHERE p.format = 'table' AND jsonb_typeof(c.col) = 'array' AND t.nlead + c.ci <= cardinality(l.toks)),
everything AS (SELECT * FROM packed UNION ALL SELECT * FROM tabled WHERE value IS NOT NULL)
SELECT m.run_id, r.started_at,
       COALESCE(m.params ->> 'host',
                (SELECT t.value FROM run_tags t WHERE t.run_id = m.run_id AND t.key = 'node'),
                (SELECT string_agg(h.value, ',' ORDER BY h.n) FROM jsonb_array_elements_text(r.hosts::jsonb)
                                                                   WITH ORDINALITY h(value, n))) AS host,
       m.benchmark, m.metric, m.value, m.unit, m.params, m.pack, m.seq
FROM everything m JOIN runs r ON r.id = m.run_id
"""


def headline_view(db: Backend) -> str:
    params = "s.params::jsonb" if db.kind != "sqlite" else "s.params"
    return f"""
CREATE VIEW headline_measurements AS
SELECT h.run_id, r.started_at, s.host, s.nodes, s.benchmark, s.metric, h.value, s.unit, {params} AS params
FROM headlines h JOIN series s ON s.id = h.series_id JOIN runs r ON r.id = h.run_id
"""


def make_measurements_view(db: Backend) -> None:
    """(Re)make the ``measurements`` view in this database's dialect."""
    db.execute("DROP VIEW IF EXISTS measurements")
    db.execute(_sqlite_measurements() if db.kind == "sqlite" else _postgres_measurements())


def make_headline_view(db: Backend) -> None:
    db.execute("DROP VIEW IF EXISTS headline_measurements")
    db.execute(headline_view(db))
