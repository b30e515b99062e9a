//! YCSB properties: read from workload files (`-P workloada`, Java properties syntax) and
//! `-p name=value` pairs, later ones winning, with typed accessors that apply YCSB's defaults.

use std::collections::BTreeMap;
use std::path::Path;

/// A bad property or workload file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PropsError {
    /// A file (a workload, or `fieldlengthhistogram`'s) could not be read or parsed.
    #[error("cannot read {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A `-p` argument without `=`.
    #[error("-p {0}: expected name=value")]
    NoValue(String),
    /// A value of the wrong type.
    #[error("property {name}={value}: expected {expected}")]
    BadValue {
        /// The property.
        name: String,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
}

/// Properties, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Props {
    values: BTreeMap<String, String>,
}

impl Props {
    /// No properties (every accessor gives YCSB's default).
    pub fn new() -> Props {
        Props::default()
    }

    /// Adds a workload file's properties (`name=value` or `name: value` lines, `#` and `!`
    /// comments), as Java's `Properties.load` reads the YCSB workload files.
    pub fn load_file(&mut self, path: &Path) -> Result<(), PropsError> {
        let text = std::fs::read_to_string(path).map_err(|e| PropsError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        self.load_str(&text);
        Ok(())
    }

    /// Adds properties from text in workload-file syntax.
    pub fn load_str(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let split = line.find(['=', ':']).unwrap_or(line.len());
            let (name, value) = line.split_at(split);
            let value = value.get(1..).unwrap_or("").trim();
            self.set(name.trim(), value);
        }
    }

    /// Adds one `name=value` argument.
    pub fn set_arg(&mut self, arg: &str) -> Result<(), PropsError> {
        let (name, value) = arg
            .split_once('=')
            .ok_or_else(|| PropsError::NoValue(arg.to_string()))?;
        self.set(name.trim(), value.trim());
        Ok(())
    }

    /// Sets one property.
    pub fn set(&mut self, name: &str, value: &str) {
        self.values.insert(name.to_string(), value.to_string());
    }

    /// The raw value, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A string with a default.
    pub fn string(&self, name: &str, default: &str) -> String {
        self.get(name).unwrap_or(default).to_string()
    }

    fn parse<T: std::str::FromStr>(
        &self,
        name: &str,
        default: T,
        expected: &'static str,
    ) -> Result<T, PropsError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| PropsError::BadValue {
                name: name.to_string(),
                value: v.to_string(),
                expected,
            }),
        }
    }

    /// An integer with a default.
    pub fn int(&self, name: &str, default: i64) -> Result<i64, PropsError> {
        self.parse(name, default, "an integer")
    }

    /// A number with a default.
    pub fn float(&self, name: &str, default: f64) -> Result<f64, PropsError> {
        self.parse(name, default, "a number")
    }

    /// A boolean with a default (`true` / `false`, any case).
    pub fn bool(&self, name: &str, default: bool) -> Result<bool, PropsError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(PropsError::BadValue {
                name: name.to_string(),
                value: v.to_string(),
                expected: "true or false",
            }),
        }
    }
}

/// YCSB's standard workloads, A to F, as the files `workloads/workloada` … ship them.
pub fn preset(name: &str) -> Option<&'static str> {
    Some(match name {
        "a" | "workloada" => {
            "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\
             readallfields=true\nreadproportion=0.5\nupdateproportion=0.5\nscanproportion=0\n\
             insertproportion=0\nrequestdistribution=zipfian\n"
        }
        "b" | "workloadb" => {
            "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\
             readallfields=true\nreadproportion=0.95\nupdateproportion=0.05\nscanproportion=0\n\
             insertproportion=0\nrequestdistribution=zipfian\n"
        }
        "c" | "workloadc" => {
            "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\
             readallfields=true\nreadproportion=1\nupdateproportion=0\nscanproportion=0\n\
             insertproportion=0\nrequestdistribution=zipfian\n"
        }
        "d" | "workloadd" => {
            "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\
             readallfields=true\nreadproportion=0.95\nupdateproportion=0\nscanproportion=0\n\
             insertproportion=0.05\nrequestdistribution=latest\n"
        }
        "e" | "workloade" => {
            "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\
             readallfields=true\nreadproportion=0\nupdateproportion=0\nscanproportion=0.95\n\
             insertproportion=0.05\nrequestdistribution=zipfian\nmaxscanlength=100\n\
             scanlengthdistribution=uniform\n"
        }
        "f" | "workloadf" => {
            "recordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\
             readallfields=true\nreadproportion=0.5\nupdateproportion=0\nscanproportion=0\n\
             insertproportion=0\nreadmodifywriteproportion=0.5\nrequestdistribution=zipfian\n"
        }
        _ => return None,
    })
}
