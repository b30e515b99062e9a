//! The embedded store on keel-region: a table of users written from four threads (puts and
//! increments), flushed to store files half way, closed, and reopened from disk, where the WAL
//! replays what the flush did not cover. Then gets, a prefix scan and a reversed scan are
//! checked against what was written.
//!
//! `cargo run -p keel-region --example embedded_store`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::error::Error;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use keel_region::{Engine, EngineOptions, FamilyOptions, Scan};

const THREADS: u32 = 4;
const USERS: u32 = 500;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    {
        let server = Engine::open(dir.path(), EngineOptions::default())?;
        let users = server.create_table("users", vec![FamilyOptions::new("info")])?;
        std::thread::scope(|s| -> Result<(), String> {
            let writers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let users = users.clone();
                    s.spawn(move || -> Result<(), String> {
                        for u in (t..USERS).step_by(THREADS as usize) {
                            let row = format!("user{u:04}");
                            users
                                .put(
                                    row.as_bytes(),
                                    b"info",
                                    b"name",
                                    format!("name {u}").as_bytes(),
                                )
                                .map_err(|e| e.to_string())?;
                            // Every thread bumps every user's login count once: 4 logins each.
                            for v in 0..USERS {
                                if v % 97 == u % 97 {
                                    users
                                        .increment(
                                            format!("user{v:04}").as_bytes(),
                                            b"info",
                                            b"logins",
                                            1,
                                        )
                                        .map_err(|e| e.to_string())?;
                                }
                            }
                            if t == 0 && u == USERS / 2 {
                                users.flush().map_err(|e| e.to_string())?;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            for writer in writers {
                writer.join().map_err(|_| "a writer panicked")??;
            }
            Ok(())
        })?;
        server.close()?;
    }

    // Reopened from the files: store files plus the WAL's replay.
    let server = Engine::open(dir.path(), EngineOptions::default())?;
    let users = server.table("users")?;
    let logins_per_user = |u: u32| (0..USERS).filter(|v| v % 97 == u % 97).count() as i64;
    for u in (0..USERS).step_by(37) {
        let row = format!("user{u:04}");
        let name = users.get_value(row.as_bytes(), b"info", b"name")?;
        if name.as_deref() != Some(format!("name {u}").as_bytes()) {
            return Err(format!("{row}: name {name:?}").into());
        }
        let logins = users
            .get_value(row.as_bytes(), b"info", b"logins")?
            .ok_or("no logins")?;
        let logins = i64::from_be_bytes(logins[..].try_into()?);
        if logins != logins_per_user(u) {
            return Err(format!("{row}: {logins} logins, expected {}", logins_per_user(u)).into());
        }
    }
    let mut prefix = Scan::all(now_ms());
    prefix.prefix = Some(Bytes::from_static(b"user01"));
    let rows = users.scan(&prefix)?;
    if rows.len() != 100 || rows.iter().any(|cells| cells.len() != 2) {
        return Err(format!("prefix scan: {} rows", rows.len()).into());
    }
    let mut reversed = Scan::all(now_ms());
    reversed.reversed = true;
    reversed.limit = Some(3);
    let last: Vec<Bytes> = users
        .scan(&reversed)?
        .iter()
        .map(|cells| cells[0].row_bytes())
        .collect();
    if last != [&b"user0499"[..], b"user0498", b"user0497"] {
        return Err(format!("reversed scan: {last:?}").into());
    }
    println!(
        "{USERS} users written by {THREADS} threads, flushed, closed and reopened: gets, a prefix \
         scan ({} rows) and a reversed scan match",
        rows.len()
    );
    server.close()?;
    Ok(())
}
