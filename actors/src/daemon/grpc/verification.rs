//! filecoin-proofs' own verifier of each kind run on the proofs the daemon answers over gRPC
//! (`verify_seal`, `verify_empty_sector_update_proof`, `verify_window_post`,
//! `verify_winning_post`: cuzk-filecoin's [`verify`](cuzk_filecoin::verify::verify)), wherever
//! the request carries what it needs: a PoRep its miner id and sector number (the replica id in
//! the C1 output binds them, but only `verify_seal` checks they are the request's), a WindowPoSt
//! partition 0 (filecoin-proofs verifies whole proofs). Run once per job, when its proof is first
//! answered; the verdict is kept with the job, counted in `cuzk_proofs_verified_total`, and a
//! proof it rejects is answered FAILED naming the verifier. No verifying key (`.vk`) in
//! filecoin-proofs' parameter cache: the proof is answered as proved, the check `skipped`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cuzk_filecoin::request::Parsed;
use cuzk_filecoin::{FilecoinError, ProofKind};

use crate::daemon::jobs::JobTable;
use crate::log;
use crate::pipeline::job::{JobId, JobOutput};

/// What the verifier said of a job's proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Accepted by this filecoin-proofs function.
    Valid(&'static str),
    /// Rejected: the message names the verifier and why.
    Invalid(String),
    /// Not checked (the reason is logged).
    Skipped,
}

struct Check {
    parsed: Parsed,
    verdict: OnceLock<Verdict>,
}

/// The checks of the jobs whose requests can be verified.
#[derive(Default)]
pub(super) struct Checks(Mutex<HashMap<JobId, Arc<Check>>>);

/// The filecoin-proofs function that verifies a proof of `kind`.
pub(super) fn verifier(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PoRep => "verify_seal",
        ProofKind::SnapDeals => "verify_empty_sector_update_proof",
        ProofKind::WindowPoSt => "verify_window_post",
        ProofKind::WinningPoSt => "verify_winning_post",
    }
}

/// Whether `p` carries what its kind's verifier needs.
pub(super) fn verifiable(p: &Parsed) -> bool {
    match p {
        Parsed::PoRep(i) => {
            i.prover_id.is_some()
                && i.sector_id.is_some()
                && !i
                    .c1
                    .registered_proof
                    .feature_enabled(filecoin_proofs_api::ApiFeature::NonInteractivePoRep)
        }
        Parsed::Snap(_) => true,
        Parsed::PoSt(i) => p.kind() == ProofKind::WinningPoSt || i.partition_index == 0,
    }
}

impl Checks {
    /// Job `job` (of request `parsed`) is to be verified when it has a proof; also forgets the
    /// checks of jobs the table no longer keeps.
    pub(super) fn expect(&self, jobs: &JobTable, job: JobId, parsed: Parsed) {
        if let Ok(mut m) = self.0.lock() {
            m.retain(|id, _| jobs.get(*id).is_some());
            m.insert(
                job,
                Arc::new(Check {
                    parsed,
                    verdict: OnceLock::new(),
                }),
            );
        }
    }

    /// The verdict on job `job`'s proof `out` (`None`: not a job to verify), run the first time
    /// it is asked for, and counted then.
    pub(super) fn verdict(&self, jobs: &JobTable, job: JobId, out: &JobOutput) -> Option<Verdict> {
        let check = self.0.lock().ok()?.get(&job).cloned()?;
        Some(
            check
                .verdict
                .get_or_init(|| {
                    let kind = check.parsed.kind();
                    let name = verifier(kind);
                    let v = run(&check.parsed, name, &out.to_bytes());
                    let l = log::job(job, None, kind.name(), None);
                    let result = match &v {
                        Verdict::Valid(_) => {
                            slog::info!(l, "proof verified"; "verifier" => name);
                            "valid"
                        }
                        Verdict::Invalid(why) => {
                            slog::warn!(l, "proof rejected: {}", why; "verifier" => name);
                            "invalid"
                        }
                        Verdict::Skipped => "skipped",
                    };
                    jobs.metrics().verified(kind.name(), result);
                    v
                })
                .clone(),
        )
    }
}

fn run(parsed: &Parsed, name: &'static str, proof: &[u8]) -> Verdict {
    match cuzk_filecoin::verify::verify(parsed, proof) {
        Ok(true) => Verdict::Valid(name),
        Ok(false) => Verdict::Invalid(format!(
            "{name} rejected the proof: it does not prove this request (another sector's or \
             miner's inputs?)"
        )),
        Err(e @ FilecoinError::MissingParams { .. }) => {
            slog::warn!(log::component("grpc"), "proof not verified: {}", e; "verifier" => name);
            Verdict::Skipped
        }
        Err(e) => Verdict::Invalid(format!("{name} refused the proof: {e}")),
    }
}
