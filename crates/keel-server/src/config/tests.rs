//! The settings table: the file and the flags set the same thing, the docs list it, and the
//! file's forms and errors behave.

use super::*;

/// `keel.toml` text setting `s` to its example.
fn toml_for(s: &Setting) -> String {
    if let Some(field) = s.key.strip_prefix(TABLE_KEY) {
        format!("[table.orders]\n{field} = {}\n", s.example.0)
    } else {
        format!("\"{}\" = {}\n", s.key, s.example.0)
    }
}

#[test]
fn every_setting_means_the_same_in_the_file_and_as_a_flag() {
    let mut keys = std::collections::HashSet::new();
    let mut flags = std::collections::HashSet::new();
    for s in SETTINGS {
        assert!(keys.insert(s.key), "{} twice", s.key);
        let mut from_file = Settings::default();
        from_file
            .apply_toml(&toml_for(s))
            .unwrap_or_else(|e| panic!("{}: {e}", s.key));
        assert_ne!(
            from_file,
            Settings::default(),
            "{}: the example must change something",
            s.key
        );
        let Some(flag) = s.flag else { continue };
        assert!(flags.insert(flag), "--{flag} twice");
        let mut from_flag = Settings::default();
        from_flag
            .apply_flag(flag, s.example.1)
            .unwrap_or_else(|e| panic!("--{flag}: {e}"));
        assert_eq!(from_file, from_flag, "{} and --{flag} disagree", s.key);
    }
}

#[test]
fn the_docs_list_every_setting() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/server.md");
    let docs = std::fs::read_to_string(&path).expect("docs/server.md");
    let section = docs
        .split_once("<!-- settings begin -->\n")
        .and_then(|(_, rest)| rest.split_once("<!-- settings end -->"))
        .map(|(table, _)| table)
        .expect("docs/server.md has the settings markers");
    assert_eq!(
        section,
        Settings::docs_table(),
        "docs/server.md's settings table is stale; it should read:\n{}",
        Settings::docs_table()
    );
}

#[test]
fn hbase_keys_in_either_form_and_errors_that_name_the_key() {
    let mut s = Settings::default();
    s.apply_toml(
        r#"
        "hbase.regionserver.handler.count" = 8
        "hbase.ipc.server.callqueue.read.ratio" = 0.5
        "keel.data.dir" = "/tmp/x"

        [hbase.hregion.memstore]
        "flush.size" = 1048576

        [hbase.regionserver.thrift]
        port = 19090

        [hbase.server.allocator.pool]
        enabled = false
        "#,
    )
    .expect("valid");
    assert_eq!(s.handler_count, 8);
    assert_eq!(s.read_ratio, 0.5);
    assert_eq!(s.flush_size, 1 << 20);
    assert_eq!(s.listen.port(), 19090);
    assert_eq!(s.data_dir, PathBuf::from("/tmp/x"));
    assert!(!s.pool_enabled);
    assert_eq!(s.buffer_strategy(), Strategy::Plain);
    let wrong = Settings::default()
        .apply_toml("\"keel.server.request.buffers\" = \"pooled\"")
        .expect_err("unknown design");
    assert!(
        wrong.contains("keel.server.request.buffers") && wrong.contains("per-connection"),
        "{wrong}"
    );
    let mut port = Settings::default();
    port.apply_toml("\"hbase.regionserver.info.port\" = 16030")
        .expect("port");
    assert_eq!(port.status_listen.map(|a| a.port()), Some(16030));
    assert!(
        Settings::default()
            .apply_toml("\"keel.status.listen\" = \"nowhere\"")
            .is_err()
    );
    let unknown = Settings::default()
        .apply_toml("\"hbase.made.up\" = 1")
        .expect_err("unknown");
    assert!(unknown.contains("hbase.made.up"), "{unknown}");
    let wrong = Settings::default()
        .apply_toml("\"hbase.regionserver.handler.count\" = \"many\"")
        .expect_err("type");
    assert!(
        wrong.contains("hbase.regionserver.handler.count"),
        "{wrong}"
    );
    assert!(Settings::default().apply_toml("not toml [").is_err());
    let flag = Settings::default()
        .apply_flag("handler-count", "many")
        .expect_err("type");
    assert!(flag.contains("--handler-count"), "{flag}");
    assert!(Settings::default().apply_flag("made-up", "1").is_err());
    // A pipeline limit of 0 means nothing: refused in the file and as a flag.
    let zero = Settings::default()
        .apply_toml("\"hbase.hregion.compacting.pipeline.segments.limit\" = 0")
        .expect_err("zero");
    assert!(
        zero.contains("hbase.hregion.compacting.pipeline.segments.limit"),
        "{zero}"
    );
    let zero = Settings::default()
        .apply_flag("pipeline-segments-limit", "0")
        .expect_err("zero");
    assert!(zero.contains("--pipeline-segments-limit"), "{zero}");
}

#[test]
fn durability_for_the_server_and_per_table() {
    let mut s = Settings::default();
    assert_eq!(s.default_durability(), Durability::SyncWal);
    s.apply_toml(
        r#"
        "hbase.wal.hsync" = true
        [table.orders]
        durability = "FSYNC_WAL"
        [table."a.b"]
        durability = "async_wal"
        "#,
    )
    .expect("valid");
    assert_eq!(s.default_durability(), Durability::FsyncWal);
    assert_eq!(s.table_durability["orders"], Durability::FsyncWal);
    assert_eq!(s.table_durability["a.b"], Durability::AsyncWal);
    for (bad, says) in [
        (
            "[table.\"..\"]\ndurability = \"SYNC_WAL\"",
            "first character",
        ),
        (
            "[table.t]\ndurability = \"SOMETIMES\"",
            "unknown durability",
        ),
        ("[table.t]\nversions = 3", "unknown key table.t.versions"),
        ("\"hbase.wal.hsync\" = 1", "hbase.wal.hsync"),
    ] {
        let err = Settings::default().apply_toml(bad).expect_err(bad);
        assert!(err.contains(says), "{bad}: {err}");
    }
    assert_eq!(
        parse_table_durability("t=FSYNC_WAL"),
        Ok(("t".to_string(), Durability::FsyncWal))
    );
    assert!(parse_table_durability("../t=FSYNC_WAL").is_err());
    assert!(parse_table_durability("t").is_err());
}

#[test]
fn a_table_is_pre_split_by_count_algorithm_or_keys() {
    let mut s = Settings::default();
    s.apply_toml(
        "[table.a]\nregions = 4\n[table.b]\nregions = \"2:UniformSplit\"\n[table.c]\nregions = [\"m\", \"t\"]\n",
    )
    .expect("applies");
    assert_eq!(s.table_split_keys["a"], keel_region::splits::hex_string(4));
    assert_eq!(s.table_split_keys["b"], keel_region::splits::uniform(2));
    assert_eq!(s.table_split_keys["c"], ["m", "t"]);
    s.apply_flag("table-regions", "d=keys:b,c").expect("flag");
    assert_eq!(s.table_split_keys["d"], ["b", "c"]);
    for bad in ["e=0", "e=9:Whatever", "e", "../x=2"] {
        assert!(s.apply_flag("table-regions", bad).is_err(), "{bad}");
    }
    assert!(s.apply_toml("[table.f]\nregions = true\n").is_err());
}
