#!/usr/bin/env python3
# Writes the fixtures beside this script: the SQL with which plumb created a new results store at
# each schema version, taken from the repository's history (create_schema in
# src/plumb/store/schema.cpp, later schema_upgrades.cpp, at the last commit of each version), so that the upgrade tests start
# from the files older plumbs really wrote. v1.sql holds all of its statements; every later file
# holds only what its version changed against the one before it (named in its first line): a
# CREATE of an object that one already creates takes that statement's place, any other statement
# (a new table or index, an ALTER) comes before the closing PRAGMAs, and a PRAGMA replaces the
# one that sets the same (or, new, comes last). compose() below and historical_schema in tests/test_store.cpp put a
# version back together. When a version is added, append the last commit of the version that
# became old to VERSIONS and run, from the repository root:
#   python3 tests/store_schemas/derive_from_history.py
# create_schema runs raw SQL constants, some through with_statuses (placeholders for the status
# lists and for shared column fragments), and the ALTERs of add_*_columns helpers; this replays
# them. Each helper's statements are checked against its source at that commit, and a step it
# does not know stops it.
import os
import re
import subprocess
import sys

# name, schema version, the last commit that created it. v5 also has its variant from before
# 537b71d, which added sweep_points.profile_id without a new version.
VERSIONS = [
    ('v1', 1, 'fc81dcb'), ('v2', 2, '9976c19'), ('v3', 3, 'ea79033'), ('v4', 4, '1310b6c'),
    ('v5-before-point-profiles', 5, 'fcf2b2b'), ('v5', 5, 'ffd8724'), ('v6', 6, 'a45811c'),
    ('v7', 7, '1764a0d'), ('v8', 8, '9839854'), ('v9', 9, '766df70'), ('v10', 10, '5ba9abb'),
    ('v11', 11, '987d668'), ('v12', 12, 'fdcb6c8'), ('v13', 13, '3936cb5'),
    ('v14', 14, '7da1664'), ('v15', 15, '48f4e17'),
]
STATUSES = "'ok', 'nan_loss', 'out_of_memory', 'error', 'unsupported'"  # run::all_statuses()
APPLICATION_ID = 0x504C4D42  # kApplicationId, the same at every version

# The ALTERs each add_*_columns helper ran, and a line of its source that shows it still does.
HELPERS = {
    'add_precision_columns': (
        "add(\"runs\", \"precision_json\", \"TEXT NOT NULL DEFAULT '[]'\")",
        [f"ALTER TABLE {t} ADD COLUMN {c};" for t in ('runs', 'profiles', 'memory_profiles')
         for c in ("dtype TEXT NOT NULL DEFAULT 'fp32'",
                   "memory_format TEXT NOT NULL DEFAULT 'contiguous'")] +
        ["ALTER TABLE runs ADD COLUMN precision_json TEXT NOT NULL DEFAULT '[]';"]),
    'add_execution_columns': (
        "ADD COLUMN heap TEXT NOT NULL DEFAULT 'keep'",
        [f"ALTER TABLE {t} ADD COLUMN {c};" for t in ('runs', 'profiles', 'memory_profiles')
         for c in ("engine TEXT NOT NULL DEFAULT 'onednn'", "heap TEXT NOT NULL DEFAULT 'keep'")]),
    'add_deliberate_settings_columns': (
        'ADD COLUMN injected_delay_ms REAL NOT NULL DEFAULT 0',
        ['ALTER TABLE runs ADD COLUMN injected_delay_ms REAL NOT NULL DEFAULT 0;']),
    'add_replay_columns': (
        'ADD COLUMN replayed_steps INTEGER',
        ['ALTER TABLE profiles ADD COLUMN learning_step_s REAL;',
         'ALTER TABLE profiles ADD COLUMN replayed_steps INTEGER;']),
    'add_token_serve_columns': (
        '{"peak_kv_used_bytes", "INTEGER NOT NULL DEFAULT 0"}',
        [f"ALTER TABLE serve_sessions ADD COLUMN {c};" for c in (
            "kind TEXT NOT NULL DEFAULT 'query'", "scheduler TEXT NOT NULL DEFAULT ''",
            'chunk_tokens INTEGER NOT NULL DEFAULT 0', 'kv_budget_bytes INTEGER NOT NULL DEFAULT 0',
            'tpot_bound_s REAL', 'burstiness REAL')] +
        [f"ALTER TABLE serve_measurements ADD COLUMN {c};" for c in (
            ['output_tokens INTEGER NOT NULL DEFAULT 0', 'good INTEGER NOT NULL DEFAULT 0',
             'output_token_rate REAL', 'goodput_rate REAL'] +
            [c for p in ('ttft', 'tpot') for c in (
                [f'{p}_{f} REAL' for f in ('tail_s', 'low_s', 'high_s', 'p50_s', 'p90_s', 'p99_s')] +
                [f'{p}_over INTEGER NOT NULL DEFAULT 0', f"{p}_verdict TEXT NOT NULL DEFAULT ''"])] +
            ['itl_p50_s REAL', 'itl_p99_s REAL', 'queueing_mean_s REAL',
             'peak_kv_reserved_bytes INTEGER NOT NULL DEFAULT 0',
             'peak_kv_used_bytes INTEGER NOT NULL DEFAULT 0'])]),
}


def function_body(src, signature):
    m = re.search('^' + re.escape(signature) + r'[^{]*\{\n(.*?)^\}', src, re.S | re.M)
    return m.group(1) if m else ''


def create_statements(commit, version):
    # schema.cpp held everything until the store's split put the SQL constants in schema_sql.h
    # and create_schema in schema_upgrades.cpp: read whichever of the three the commit has.
    src = ''
    for path in ('schema.cpp', 'schema_sql.h', 'schema_upgrades.cpp'):
        shown = subprocess.run(['git', 'show', f'{commit}:src/plumb/store/{path}'], text=True,
                               capture_output=True)
        src += shown.stdout if shown.returncode == 0 else ''
    constants = dict(re.findall(r'constexpr const char\* (k\w+) =\s*R"sql\((.*?)\)sql";', src, re.S))
    placeholders = re.findall(r'"(@[A-Z_]+@)"', function_body(src, 'std::string with_statuses('))
    values = {'@PASS_COLUMNS@': constants.get('kPassColumnsSql'),
              '@RECORD_COLUMNS@': constants.get('kRecordColumnsSql'),
              '@POINT_STATUSES@': STATUSES + ", 'timeout'", '@STATUSES@': STATUSES}

    def with_statuses(sql):
        for placeholder in placeholders:  # in with_statuses' own order
            sql = sql.replace(placeholder, values[placeholder])
        return sql

    out = []
    for step in function_body(src, 'void create_schema(').split(';\n'):
        step = step.strip()
        if not step:
            continue
        m = re.fullmatch(r'db\.exec\((with_statuses\()?(k\w+)\)?\)', step)
        if m:
            out.append(with_statuses(constants[m.group(2)]) if m.group(1) else constants[m.group(2)])
        elif step.split('(')[0] in HELPERS:
            name = step.split('(')[0]
            witness, alters = HELPERS[name]
            if witness not in function_body(src, 'void ' + name + '('):
                sys.exit(f'{commit}: {name} is not the one this script knows')
            out += alters
        elif 'application_id' in step:
            out.append(f'PRAGMA application_id = {APPLICATION_ID};')
        elif 'user_version' in step:
            out.append(f'PRAGMA user_version = {version};')
        else:
            sys.exit(f'{commit}: create_schema step {step!r} is not known here')
    return statements('\n'.join(s.strip('\n') for s in out) + '\n')


HERE = os.path.dirname(os.path.abspath(__file__))


def statements(text):
    # The statements of a fixture, without comment lines and the ';' that ends each.
    sql = '\n'.join(line for line in text.split('\n') if not line.startswith('--'))
    return [s.strip() for s in sql.split(';\n') if s.strip()]


def creates(statement):
    # What a statement creates or sets ('CREATE TABLE runs', 'PRAGMA user_version'), None for
    # an ALTER.
    m = re.match(r'(CREATE (?:TABLE|INDEX)) (?:IF NOT EXISTS )?(\w+)|(PRAGMA \w+)', statement)
    return (m.group(3) or m.group(1) + ' ' + m.group(2)) if m else None


def apply_changes(base, changes):
    out = list(base)
    for statement in changes:
        what = creates(statement)
        same = [i for i, s in enumerate(out) if what and creates(s) == what]
        if same:
            out[same[0]] = statement
        else:
            pragmas = [i for i, s in enumerate(out) if s.startswith('PRAGMA')]
            closing = statement.startswith('PRAGMA') or not pragmas
            out.insert(len(out) if closing else pragmas[0], statement)
    return out


def compose(name):
    # The statements of fixture `name`, put together from v1.sql and the changes up to it.
    with open(os.path.join(HERE, name + '.sql')) as f:
        text = f.read()
    base = re.search(r'as changes to (\S+)\.sql', text.split('\n')[0])
    return apply_changes(compose(base.group(1)) if base else [], statements(text))


def main():
    previous = ('', [])
    for name, version, commit in VERSIONS:
        full = create_statements(commit, version)
        changes = [s for s in full if s not in previous[1]]
        if apply_changes(previous[1], changes) != full:
            sys.exit(f'{name}: its changes against {previous[0]} do not give it back')
        against = f', as changes to {previous[0]}.sql' if previous[0] else ''
        with open(os.path.join(HERE, name + '.sql'), 'w') as f:
            f.write(f'-- plumb results store, schema v{version}: what create_schema ran at commit '
                    f'{commit}{against}\n-- (written by tests/store_schemas/derive_from_history.py)\n')
            f.write(';\n'.join(changes) + ';\n')
        if compose(name) != full:
            sys.exit(f'{name}: the file written does not compose back')
        previous = (name, full)


if __name__ == '__main__':
    main()
