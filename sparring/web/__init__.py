"""The web app: browse runs, reports and transcripts; play games against models (`sparring serve`).

`create_app(runs_dir)` (in `app`) builds the FastAPI application; FastAPI and uvicorn are the
`web` extra, imported only when the app is built.
"""
