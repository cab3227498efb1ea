package prometheus

import "github.com/warrenmq/messaging/patterns/flow"

// Flow returns the flow.Monitor: flow_hops_total{pipeline,step,result},
// flow_step_failures_total{pipeline,step}, flow_refused_total{pipeline,step},
// pipeline_run_total{pipeline,step,outcome} and
// pipeline_run_seconds{pipeline,outcome}. Pipeline and step names are the
// code's own (InPipeline, AtStep, the pipeline's steps, the slip's stop
// names), so the labels stay bounded.
func (m *Metrics) Flow() flow.Monitor { return flowMonitor{m} }

type flowMonitor struct{ m *Metrics }

func (f flowMonitor) Forwarded(pipeline, step string) {
	f.m.flowHops.WithLabelValues(pipeline, step, "success").Inc()
}

func (f flowMonitor) ForwardFailed(pipeline, step string, _ error) {
	f.m.flowHops.WithLabelValues(pipeline, step, "failure").Inc()
}

func (f flowMonitor) StepFailed(pipeline, step string, _ error) {
	f.m.flowFailed.WithLabelValues(pipeline, step).Inc()
}

func (f flowMonitor) Refused(pipeline, step string, _ error) {
	f.m.flowRefused.WithLabelValues(pipeline, step).Inc()
}

func (f flowMonitor) RunFinished(run flow.RunFinished) {
	f.m.pipelineRuns.WithLabelValues(run.Pipeline, run.Step, run.Outcome).Inc()
	f.m.pipelineRunSeconds.WithLabelValues(run.Pipeline, run.Outcome).Observe(seconds(run.Age))
}
