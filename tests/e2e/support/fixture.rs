//! The "tenant + uploaded component + job type" every end-to-end test starts from, in
//! one place. [`Fixture::new`] builds it through the store's API (what a test driving
//! `sluice::worker` or `sluice serve` in-process needs: a [`Store`], optionally a
//! [`Sandbox`], the component ids); [`Sluice::define`] does the same through the real
//! binary's verbs, for tests that only talk to `sluice` as a process
//! ([`Sluice::with_type`] migrates and defines one type in one call;
//! [`Sluice::define_guest`] does it for a guest-language component). Jobs in a given
//! state come from [`Jobs`](super::jobs::Jobs) (`fixture.jobs()`).

use std::collections::BTreeMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use sluice_sandbox::{Sandbox, SandboxConfig};
use sluice_store::{JobTypeSpec, NewComponent, NewJob, Store};
use sqlx::PgPool;

use super::jobs::Jobs;
use super::{Sluice, guest, sample};

/// The tenant a fixture creates unless told otherwise (the binary's default tenant).
pub const DEFAULT_TENANT: &str = "default";

/// The component cache every test pushing guest-language components shares (see
/// [`Sluice::for_guests`]).
const GUEST_CACHE: &str = "sluice-test-cache-languages";

/// Largest component the fixture's sandbox validation accepts (as in the tests before).
const MAX_COMPONENT_BYTES: usize = 50 << 20;

type Customize = Box<dyn Fn(JobTypeSpec) -> JobTypeSpec + Send + Sync>;

struct TypeDef {
    name: String,
    sample: String,
    customize: Customize,
}

/// What [`Fixture::new`] returns: say what to create, then `.await` it.
#[must_use = "a fixture builder does nothing until awaited"]
pub struct FixtureBuilder {
    pool: PgPool,
    tenants: Vec<String>,
    sandbox: Option<SandboxConfig>,
    log_filter: Option<String>,
    samples: Vec<String>,
    types: Vec<TypeDef>,
}

impl FixtureBuilder {
    /// Adds a tenant (the first one added replaces [`DEFAULT_TENANT`]). Every component
    /// and job type is created for every tenant.
    pub fn tenant(mut self, tenant: &str) -> Self {
        self.tenants.push(tenant.to_owned());
        self
    }

    /// Starts a sandbox with `config`; every component is validated by it before upload
    /// (as `sluice component push` does), which also compiles it once.
    pub fn sandbox(mut self, config: SandboxConfig) -> Self {
        self.sandbox = Some(config);
        self
    }

    /// A sandbox with the default settings but `max_concurrency` instances at once.
    pub fn sandbox_of(self, max_concurrency: u32) -> Self {
        self.sandbox(SandboxConfig {
            max_concurrency,
            ..SandboxConfig::default()
        })
    }

    /// Logs to the test's output at `filter` (e.g. `"warn,sluice=info"`): a failing
    /// test then shows the worker's warnings. First fixture of a test binary wins.
    pub fn log(mut self, filter: &str) -> Self {
        self.log_filter = Some(filter.to_owned());
        self
    }

    /// Uploads the sample component `sample` (built by `scripts/build-samples`) under its
    /// own name. A job type's component is uploaded without saying so.
    pub fn component(mut self, sample: &str) -> Self {
        if !self.samples.iter().any(|s| s == sample) {
            self.samples.push(sample.to_owned());
        }
        self
    }

    /// Job type `name` run by the sample component `sample`, with the host's defaults
    /// ([`JobTypeSpec::new`]: 3 attempts).
    pub fn job_type(self, name: &str, sample: &str) -> Self {
        self.job_type_with(name, sample, |spec| spec)
    }

    /// Job type `name` run by `sample`, its limits set by `customize` from
    /// [`JobTypeSpec::new`] (tenant, name and component id are filled in).
    pub fn job_type_with(
        mut self,
        name: &str,
        sample: &str,
        customize: impl Fn(JobTypeSpec) -> JobTypeSpec + Send + Sync + 'static,
    ) -> Self {
        self = self.component(sample);
        self.types.push(TypeDef {
            name: name.to_owned(),
            sample: sample.to_owned(),
            customize: Box::new(customize),
        });
        self
    }

    async fn build(self) -> Fixture {
        if let Some(filter) = &self.log_filter {
            let _ = tracing_subscriber::fmt()
                .with_test_writer()
                .with_env_filter(filter.as_str())
                .try_init();
        }
        let tenants = if self.tenants.is_empty() {
            vec![DEFAULT_TENANT.to_owned()]
        } else {
            self.tenants
        };
        let store = Store::new(self.pool.clone());
        let sandbox = self
            .sandbox
            .map(|config| Sandbox::new(config).expect("start the sandbox"));
        let mut bytes = BTreeMap::new();
        for name in &self.samples {
            let file = std::fs::read(sample(name)).expect("read the sample component");
            if let Some(sandbox) = &sandbox {
                sandbox
                    .validate(&file, MAX_COMPONENT_BYTES)
                    .unwrap_or_else(|e| panic!("sample {name} does not validate: {e:?}"));
            }
            bytes.insert(name.clone(), file);
        }
        let mut components = BTreeMap::new();
        for tenant in &tenants {
            store.create_tenant(tenant).await.unwrap();
            for (name, file) in &bytes {
                let component = store
                    .put_component(&NewComponent {
                        tenant: tenant.clone(),
                        name: name.clone(),
                        version: None,
                        bytes: file.clone(),
                        contract: sluice_sandbox::contract_of(file).unwrap().minor(),
                    })
                    .await
                    .unwrap();
                components.insert((tenant.clone(), name.clone()), component.id);
            }
            for def in &self.types {
                let component_id = components[&(tenant.clone(), def.sample.clone())];
                let spec = (def.customize)(JobTypeSpec::new(tenant, &def.name, component_id));
                assert_eq!(
                    (spec.tenant.as_str(), spec.name.as_str(), spec.component_id),
                    (tenant.as_str(), def.name.as_str(), component_id),
                    "customize a job type's limits, not what it is"
                );
                store.set_job_type(&spec).await.unwrap();
            }
        }
        Fixture {
            pool: self.pool,
            store,
            sandbox,
            tenants,
            components,
        }
    }
}

impl IntoFuture for FixtureBuilder {
    type Output = Fixture;
    type IntoFuture = Pin<Box<dyn Future<Output = Fixture> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.build())
    }
}

/// Tenants with uploaded sample components and job types, ready for jobs.
pub struct Fixture {
    pub pool: PgPool,
    pub store: Store,
    sandbox: Option<Sandbox>,
    tenants: Vec<String>,
    components: BTreeMap<(String, String), i64>,
}

impl Fixture {
    /// Start describing a fixture over `pool` (already migrated); `.await` builds it.
    // A builder, which `.await` turns into the fixture: `Fixture::new(..)…await` reads
    // as what it makes.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(pool: &PgPool) -> FixtureBuilder {
        FixtureBuilder {
            pool: pool.clone(),
            tenants: Vec::new(),
            sandbox: None,
            log_filter: None,
            samples: Vec::new(),
            types: Vec::new(),
        }
    }

    /// The first tenant (the one [`Fixture::job`] enqueues for).
    pub fn tenant(&self) -> &str {
        &self.tenants[0]
    }

    /// The sandbox asked for with [`FixtureBuilder::sandbox`].
    pub fn sandbox(&self) -> &Sandbox {
        self.sandbox
            .as_ref()
            .expect("this fixture was built without .sandbox(..)")
    }

    /// The id of `tenant`'s upload of `sample`.
    pub fn component_id(&self, tenant: &str, sample: &str) -> i64 {
        *self
            .components
            .get(&(tenant.to_owned(), sample.to_owned()))
            .unwrap_or_else(|| panic!("the fixture uploaded no {sample} for {tenant}"))
    }

    /// A job of the first tenant, due now, with the job type's defaults.
    pub fn job(&self, job_type: &str, payload: impl Into<Vec<u8>>) -> NewJob {
        NewJob::new(self.tenant(), job_type, payload)
    }

    /// The job factory over this fixture's store, claiming as the host does (contracts
    /// up to the newest) with a one-hour lease.
    pub fn jobs(&self) -> Jobs<'_> {
        Jobs::new(&self.store)
            .lease(Duration::from_secs(3600))
            .max_contract(sluice_sandbox::Contract::NEWEST.minor())
    }
}

impl Sluice {
    /// A [`Sluice`] over the test's database, migrated by `sluice migrate` (for tests
    /// made with `#[sqlx::test(migrations = false)]`).
    pub fn migrated(pool: &PgPool) -> Sluice {
        let sluice = Sluice::new(pool);
        sluice.ok(&["migrate"]);
        sluice
    }

    /// The fixture through the binary: `sluice component push` of the sample `sample`
    /// (as `--name sample`) and `sluice types set job_type --component sample`, followed
    /// by `type_args` (e.g. `--max-attempts 2`).
    pub fn define(&self, job_type: &str, sample_name: &str, type_args: &[&str]) -> &Sluice {
        let file = sample(sample_name);
        self.ok(&[
            "component",
            "push",
            file.to_str().expect("a UTF-8 path"),
            "--name",
            sample_name,
        ]);
        let mut args = vec!["types", "set", job_type, "--component", sample_name];
        args.extend_from_slice(type_args);
        self.ok(&args);
        self
    }

    /// [`Sluice::migrated`], then one job type: `job_type` run by the sample `sample_name`,
    /// defined with `type_args` (see [`Sluice::define`]).
    pub fn with_type(
        pool: &PgPool,
        job_type: &str,
        sample_name: &str,
        type_args: &[&str],
    ) -> Sluice {
        let sluice = Sluice::migrated(pool);
        sluice.define(job_type, sample_name, type_args);
        sluice
    }

    /// A migrated [`Sluice`] whose component cache is shared by every test pushing
    /// guest-language components (`languages`, `guest_secrets`): the big interpreter
    /// components compile once per run (and once per machine across runs).
    pub fn for_guests(pool: &PgPool) -> Sluice {
        let mut sluice = Sluice::new(pool);
        sluice.cache = std::env::temp_dir().join(GUEST_CACHE);
        sluice.ok(&["migrate"]);
        sluice
    }

    /// [`Sluice::define`] for a guest-language component: pushes
    /// `sample-tasks/<lang>/build/<name>.wasm` as `name` (validated and precompiled,
    /// timed on stderr) and defines `job_type` on it with `type_args`.
    pub fn define_guest(
        &self,
        lang: &str,
        name: &str,
        job_type: &str,
        type_args: &[&str],
    ) -> &Sluice {
        let file = guest(lang, name);
        let started = std::time::Instant::now();
        let pushed = self.json(&["component", "push", file.to_str().unwrap(), "--name", name]);
        eprintln!(
            "{lang}/{name}: {} bytes pushed (validated and precompiled) in {:?}",
            pushed["size"],
            started.elapsed()
        );
        let mut args = vec!["types", "set", job_type, "--component", name];
        args.extend_from_slice(type_args);
        self.ok(&args);
        self
    }
}
