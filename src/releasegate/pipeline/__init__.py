"""The commands' work, each a function of the run record and the inputs: the top of the library, under cli/.

    check           a run's lifecycle: start, resume, stages, run.json status (`run_check`, `resume_check`)
    gate            scores, metrics, criteria, review and the judge's verdicts -> the gate report (`judge_run`)
    regate          `releasegate gate`: a finished run decided again, and what-if rubrics
    matrix          deployment variants (variants) of one model, run and compared
    compare         two saved runs compared
    servers         serving stacks run on the same work, compared (server_ranking: which to choose)
    verify          a run's files against its manifest and seal
"""
